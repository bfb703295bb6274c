"""Reads of the edit benchmark's page: the stages and endpoints it offers and the ones chosen."""

from __future__ import annotations

from typing import Any

from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import Stage


def benchmark_stage_or_none(*, stage_id: int) -> Stage | None:
    """The stage with this id (its evolution's dataset and both versions read with it), or None."""
    return (
        Stage.objects.select_related(
            "evolution__dataset", "parent_version__harness", "candidate_version"
        )
        .filter(pk=stage_id)
        .first()
    )


def endpoints_by_id(*, ids: list[str]) -> dict[str, ModelEndpoint]:
    """The endpoints of these ids (as text), by their id as text."""
    return {str(e.pk): e for e in ModelEndpoint.objects.filter(pk__in=ids)}


def benchmark_choices() -> dict[str, Any]:
    """Every endpoint, and the newest 100 stages whose candidate is committed."""
    return {
        "endpoints": ModelEndpoint.objects.order_by("name"),
        "stages": (
            Stage.objects.filter(candidate_version__isnull=False)
            .select_related("evolution")
            .order_by("-pk")[:100]
        ),
    }


def stage_get(*, stage_id: int) -> Stage:
    """One stage (``Stage.DoesNotExist`` when none)."""
    return Stage.objects.get(pk=stage_id)
