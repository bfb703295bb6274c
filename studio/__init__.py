"""Harness Studio: the Django project (settings, urls, Celery app) and its apps."""

from studio.celery import app as celery_app

__all__ = ["celery_app"]
