"""App config for studio.annotation: queues of cases people label, the sets they make, judges
measured on them."""

from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "studio.annotation"
    label = "annotation"
    verbose_name = "Annotation"
    default_auto_field = "django.db.models.BigAutoField"
