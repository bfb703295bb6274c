"""App config for studio.compatibility: the checkpoint x Harness-version matrix, its gate and the
retrain alarm."""

from django.apps import AppConfig


class CompatibilityConfig(AppConfig):
    name = "studio.compatibility"
    label = "compatibility"
    verbose_name = "Compatibility"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from studio.compatibility import signals  # noqa: F401  (a label move fills the cells it needs)
