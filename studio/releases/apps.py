"""App config for studio.releases: release manifests, their gates and approval."""

from django.apps import AppConfig


class ReleasesConfig(AppConfig):
    name = "studio.releases"
    label = "releases"
    verbose_name = "Releases"
    default_auto_field = "django.db.models.BigAutoField"
