"""Reads of the playground page: what it offers to choose from, and the rows a submitted choice
names (None when the id names none; the view names the field)."""

from __future__ import annotations

from typing import Any

from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import Dataset
from studio.harnesses.models import Draft, HarnessVersion


def playground_choices() -> dict[str, Any]:
    """The newest 200 Harness versions (with their labels), every endpoint and every dataset."""
    return {
        "versions": (
            HarnessVersion.objects.select_related("harness")
            .prefetch_related("labels")
            .defer("tree")
            .order_by("harness__name", "-number")[:200]
        ),
        "endpoints": ModelEndpoint.objects.all(),
        "datasets": Dataset.objects.only("pk", "name", "case_count").order_by("name"),
    }


def dataset_or_none(*, pk: int | None) -> Dataset | None:
    return Dataset.objects.filter(pk=pk).first() if pk else None


def open_draft_or_none(*, pk: int | None) -> Draft | None:
    """The open editor draft with this id, or None (none, or committed or discarded)."""
    if not pk:
        return None
    return (
        Draft.objects.select_related("harness", "base_version__harness")
        .filter(pk=pk, status=Draft.OPEN)
        .first()
    )


def version_or_none(*, pk: int | None) -> HarnessVersion | None:
    return HarnessVersion.objects.filter(pk=pk or 0).first()


def endpoint_or_none(*, pk: int | None) -> ModelEndpoint | None:
    return ModelEndpoint.objects.filter(pk=pk or 0).first()
