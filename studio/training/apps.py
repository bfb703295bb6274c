"""App config for studio.training: runs started from the browser, dashboards, the checkpoint
registry."""

from django.apps import AppConfig


class TrainingConfig(AppConfig):
    name = "studio.training"
    label = "training"
    default_auto_field = "django.db.models.BigAutoField"
