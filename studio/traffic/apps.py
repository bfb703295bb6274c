"""App config for studio.traffic: deployments, their API tokens and the trajectories they send."""

from django.apps import AppConfig


class TrafficConfig(AppConfig):
    name = "studio.traffic"
    label = "traffic"
    verbose_name = "Traffic"
    default_auto_field = "django.db.models.BigAutoField"
