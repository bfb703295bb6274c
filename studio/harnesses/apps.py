"""App config for studio.harnesses."""

from django.apps import AppConfig


class HarnessesConfig(AppConfig):
    name = "studio.harnesses"
    label = "harnesses"
    default_auto_field = "django.db.models.BigAutoField"
