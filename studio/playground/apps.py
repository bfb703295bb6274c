"""App config for studio.playground."""

from django.apps import AppConfig


class PlaygroundConfig(AppConfig):
    name = "studio.playground"
    label = "playground"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from studio.playground import signals  # noqa: F401 - connects the worker's warm-up
