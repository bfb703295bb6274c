"""App config for studio.endpoints."""

from django.apps import AppConfig


class EndpointsConfig(AppConfig):
    name = "studio.endpoints"
    label = "endpoints"
    default_auto_field = "django.db.models.BigAutoField"
