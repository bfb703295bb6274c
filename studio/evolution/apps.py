"""App config for studio.evolution: datasets, evaluation runs, diagnoses, stages, decisions."""

from django.apps import AppConfig


class EvolutionConfig(AppConfig):
    name = "studio.evolution"
    label = "evolution"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from studio.evolution import (
            signals,  # noqa: F401 - connects the worker-start resume
            stages,  # noqa: F401 - a finished run's stage gets its regression report
        )
