"""Reads of production traffic: the filtered list and the facets its filters offer."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from studio.traffic.models import Deployment, DeploymentToken, TrafficTrajectory

OUTCOMES = ("replied", "silent", "fallback", "suppressed")


@dataclass
class TrafficFilters:
    """The traffic page's filters, as parsed from its query string; a bad value is named in
    ``problems``."""

    deployment: str = ""
    outcome: str = ""
    hook: str = ""
    category: str = ""
    version: str = ""  # a Harness digest ("unknown" for digests the studio does not hold)
    min_latency_s: float | None = None
    max_latency_s: float | None = None

    @classmethod
    def from_query(cls, query) -> tuple[TrafficFilters, list[str]]:
        problems: list[str] = []
        limits: dict[str, float | None] = {}
        for key in ("min_latency_s", "max_latency_s"):
            raw = (query.get(key) or "").strip()
            limits[key] = None
            if raw:
                try:
                    limits[key] = float(raw)
                except ValueError:
                    problems.append(f"{key}: a number of seconds, e.g. 2.5; got {raw[:20]!r}")
        outcome = query.get("outcome", "")
        if outcome and outcome not in OUTCOMES:
            problems.append(f"outcome: one of {', '.join(OUTCOMES)}; got {outcome[:20]!r}")
            outcome = ""
        return cls(
            deployment=query.get("deployment", ""),
            outcome=outcome,
            hook=query.get("hook", ""),
            category=query.get("category", ""),
            version=query.get("version", ""),
            **limits,
        ), problems


def traffic_list(*, filters: TrafficFilters) -> QuerySet[TrafficTrajectory]:
    rows = TrafficTrajectory.objects.select_related("deployment", "harness_version__harness")
    if filters.deployment:
        rows = rows.filter(deployment__name=filters.deployment)
    if filters.outcome:
        rows = rows.filter(outcome=filters.outcome)
    if filters.hook:
        rows = rows.filter(blocked_by__contains=f",{filters.hook},")
    if filters.category:
        rows = rows.filter(category=filters.category)
    if filters.version == "unknown":
        rows = rows.filter(harness_version__isnull=True)
    elif filters.version:
        rows = rows.filter(harness_digest=filters.version)
    if filters.min_latency_s is not None:
        rows = rows.filter(latency_s__gte=filters.min_latency_s)
    if filters.max_latency_s is not None:
        rows = rows.filter(latency_s__lte=filters.max_latency_s)
    return rows


def trajectory_get(*, trajectory_id: int) -> TrafficTrajectory:
    """One stored trajectory with its deployment and Harness version (DoesNotExist when none)."""
    return TrafficTrajectory.objects.select_related("deployment", "harness_version__harness").get(
        pk=trajectory_id
    )


def deployment_list() -> QuerySet[Deployment]:
    """Every deployment with its tokens."""
    return Deployment.objects.prefetch_related("tokens")


def deployment_get(*, name: str) -> Deployment:
    """The deployment of this name (DoesNotExist when none)."""
    return Deployment.objects.get(name=name)


def deployment_token_get(*, token_id: int) -> DeploymentToken:
    """One deployment token with its deployment (DoesNotExist when none)."""
    return DeploymentToken.objects.select_related("deployment").get(pk=token_id)


def traffic_facets() -> dict:
    """What the filters offer: deployments, categories, hooks that blocked, versions seen."""
    rows = TrafficTrajectory.objects
    hooks: dict[str, int] = {}
    for blocked in rows.exclude(blocked_by="").values_list("blocked_by", flat=True)[:5000]:
        for hook in filter(None, blocked.split(",")):
            hooks[hook] = hooks.get(hook, 0) + 1
    versions = []
    for row in (
        rows.values("harness_digest", "harness_name", "harness_version__number")
        .annotate(n=Count("id"))
        .order_by("harness_name", "harness_version__number")
    ):
        number = row["harness_version__number"]
        versions.append(
            {
                "digest": row["harness_digest"],
                "n": row["n"],
                "label": f"{row['harness_name']} v{number}"
                if number
                else f"{row['harness_name']} {row['harness_digest'][:12]} (unknown)",
            }
        )
    return {
        "deployments": list(Deployment.objects.values_list("name", flat=True)),
        "categories": list(
            rows.exclude(category="")
            .values_list("category")
            .annotate(n=Count("id"))
            .order_by("category")
        ),
        "hooks": sorted(hooks.items()),
        "versions": versions,
        "outcomes": OUTCOMES,
        "unknown_versions": rows.filter(Q(harness_version__isnull=True)).count(),
    }
