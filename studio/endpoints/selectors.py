"""Reads for model endpoints."""

from __future__ import annotations

from django.db.models import QuerySet

from studio.endpoints.models import ModelEndpoint


def endpoint_list() -> QuerySet[ModelEndpoint]:
    return ModelEndpoint.objects.select_related("api_key_secret")
