"""App config for studio.editbench: the held-out edit benchmark page (evaluation.edit_transfer)."""

from django.apps import AppConfig


class EditbenchConfig(AppConfig):
    name = "studio.editbench"
    label = "editbench"
    verbose_name = "Held-out edit benchmark"
    default_auto_field = "django.db.models.BigAutoField"
