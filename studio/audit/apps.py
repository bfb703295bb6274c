"""App config for studio.audit."""

from django.apps import AppConfig


class AuditConfig(AppConfig):
    name = "studio.audit"
    label = "audit"
    default_auto_field = "django.db.models.BigAutoField"
