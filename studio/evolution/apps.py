"""App config for studio.evolution: datasets, evaluation runs, diagnoses, stages, decisions."""

from django.apps import AppConfig


class EvolutionConfig(AppConfig):
    name = "studio.evolution"
    label = "evolution"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from studio.evolution import receivers  # noqa: F401 - the worker-start resume, cancels
        from studio.evolution.services import (  # noqa: F401
            stages,  # a finished run's stage gets its regression report
        )
