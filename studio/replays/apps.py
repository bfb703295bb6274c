"""App config for studio.replays: the deployment-replay dashboards."""

from django.apps import AppConfig


class ReplaysConfig(AppConfig):
    name = "studio.replays"
    label = "replays"
    verbose_name = "Deployment replays"
    default_auto_field = "django.db.models.BigAutoField"
