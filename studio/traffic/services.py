"""Writes of production traffic: deployments, their tokens, and storing the trajectories they
post."""

from __future__ import annotations

import hashlib
import re
import secrets
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.utils import timezone

from studio.audit.services import audit_record
from studio.traffic.models import Deployment, DeploymentToken, TrafficTrajectory

TOKEN_PREFIX = "hsd_"
MAX_RECORDS_PER_POST = 100


class TrafficError(ValueError):
    """A post or a form the studio refuses; ``problems`` name each field (``trajectory[2].route:
    ...``)."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


class TrafficLimitReached(TrafficError):
    """A deployment has stored ``TRAFFIC_MAX_RECORDS_PER_HOUR`` records in the last hour (a 429);
    ``retry_after_s`` says when the oldest of them leaves the window."""

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


@transaction.atomic
def deployment_create(*, name: str, actor: User, description: str = "") -> Deployment:
    name = name.strip().lower()
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,79}", name):
        raise TrafficError(f"name: use 1-80 of a-z, 0-9, '-' or '_' (e.g. shop-eu), not {name!r}")
    if Deployment.objects.filter(name=name).exists():
        raise TrafficError(f"name: a deployment called {name!r} exists already")
    deployment = Deployment.objects.create(
        name=name, description=description.strip(), created_by=actor
    )
    audit_record(
        actor=actor, action="traffic.deployment.create", target=f"deployment {name}", data={}
    )
    return deployment


@transaction.atomic
def deployment_token_create(
    *, deployment: Deployment, actor: User | None
) -> tuple[DeploymentToken, str]:
    """A new token for ``deployment``; returns the row and the token, which is shown once and never
    stored."""
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    row = DeploymentToken.objects.create(
        deployment=deployment, prefix=token[:12], digest=_digest(token), created_by=actor
    )
    audit_record(
        actor=actor,
        action="traffic.token.create",
        target=f"deployment {deployment.name}",
        data={"prefix": row.prefix},
    )
    return row, token


def deployment_token_revoke(*, token: DeploymentToken, actor: User) -> None:
    DeploymentToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
    audit_record(
        actor=actor,
        action="traffic.token.revoke",
        target=f"deployment {token.deployment.name}",
        data={"prefix": token.prefix},
    )


def deployment_token_authenticate(*, token: str) -> DeploymentToken | None:
    """The active token row for ``token``, or None."""
    if not token.startswith(TOKEN_PREFIX):
        return None
    row = (
        DeploymentToken.objects.select_related("deployment")
        .filter(digest=_digest(token), revoked_at__isnull=True)
        .first()
    )
    if row is not None:
        DeploymentToken.objects.filter(pk=row.pk).update(last_used_at=timezone.now())
    return row


def _model_problems(record: dict, where: str) -> list[str]:
    model = record.get("model")
    if model is None:
        return []
    if (
        not isinstance(model, dict)
        or any(k not in ("name", "fingerprint") for k in model)
        or not all(isinstance(v, str) and len(v) <= 300 for v in model.values())
    ):
        return [f'{where}.model: an object {{"name": str, "fingerprint": str}} (both optional)']
    return []


def _row(
    *, deployment: Deployment, record: dict[str, Any], versions: dict[str, Any]
) -> TrafficTrajectory:
    from evaluation.diagnosis.records import comment_text

    request = record["request"]
    blocked = [
        h["hook_id"] for h in record.get("hook_decisions", []) if h.get("decision") != "allow"
    ]
    model = record.get("model") or {}
    return TrafficTrajectory(
        deployment=deployment,
        request_id=record["request_id"],
        harness_name=record["harness"]["name"][:200],
        harness_digest=record["harness"]["digest"][:200],
        harness_version=versions.get(record["harness"]["digest"]),
        model_name=model.get("name", "") or record.get("policy", "")[:300],
        model_fingerprint=model.get("fingerprint", "")[:100],
        outcome=record.get("outcome", "replied"),
        route=record.get("route", "public"),
        category=str(request.get("intent") or "")[:40],
        blocked_by=("," + ",".join(dict.fromkeys(blocked)) + ",")[:500] if blocked else "",
        latency_s=float((record.get("timings") or {}).get("total_s") or 0.0),
        reply=record.get("reply", ""),
        comment=comment_text(request)[:500],
        record=record,
    )


def traffic_ingest(*, deployment: Deployment, records: Any) -> dict[str, list[str]]:
    """Store the posted trajectory records (one object or a list) all or nothing; a request id this
    deployment sent before is not stored again. TrafficError names every bad field."""
    from harness.runtime.trajectory import record_problems
    from studio.harnesses.models import HarnessVersion

    batch = records if isinstance(records, list) else [records]
    if not batch:
        raise TrafficError("body: an empty list; send a trajectory record or a list of them")
    if len(batch) > MAX_RECORDS_PER_POST:
        raise TrafficError(
            f"body: {len(batch)} records; send at most {MAX_RECORDS_PER_POST} per request"
        )
    problems: list[str] = []
    for i, record in enumerate(batch):
        where = f"trajectory[{i}]" if isinstance(records, list) else "trajectory"
        problems += record_problems(record, where=where)
        if isinstance(record, dict):
            problems += _model_problems(record, where)
    if problems:
        raise TrafficError(
            "the trajectory record is not valid: " + "; ".join(problems[:10]), problems
        )
    _within_hourly_limit(deployment=deployment, adding=len(batch))
    ids = [r["request_id"] for r in batch]
    digests = {r["harness"]["digest"] for r in batch}
    versions = {
        v.digest: v for v in HarnessVersion.objects.filter(digest__in=digests).order_by("pk")
    }
    seen = set(
        TrafficTrajectory.objects.filter(deployment=deployment, request_id__in=ids).values_list(
            "request_id", flat=True
        )
    )
    stored, duplicates = [], []
    with transaction.atomic():
        for record in batch:
            rid = record["request_id"]
            if rid in seen:
                duplicates.append(rid)
                continue
            try:
                with (
                    transaction.atomic()
                ):  # two posts of the same id at once: the second is a duplicate
                    _row(deployment=deployment, record=record, versions=versions).save()
            except IntegrityError as error:
                # only the one-row-per-request-id constraint makes a duplicate; any other refusal
                # of the database is a failed save, answered as one (nothing of the post is kept)
                if not TrafficTrajectory.objects.filter(
                    deployment=deployment, request_id=rid
                ).exists():
                    raise TrafficError(
                        f"trajectory {rid[:80]!r}: the database refused it ({type(error).__name__})"
                        "; nothing of this post was stored"
                    ) from None
                duplicates.append(rid)
                continue
            seen.add(rid)
            stored.append(rid)
    return {"stored": stored, "duplicates": duplicates}


def _within_hourly_limit(*, deployment: Deployment, adding: int) -> None:
    """TrafficLimitReached when storing ``adding`` more records would pass the deployment's
    ``TRAFFIC_MAX_RECORDS_PER_HOUR`` (counted from what it stored in the last hour)."""
    from datetime import timedelta

    from django.conf import settings

    limit = settings.TRAFFIC_MAX_RECORDS_PER_HOUR
    since = timezone.now() - timedelta(hours=1)
    recent = TrafficTrajectory.objects.filter(deployment=deployment, received_at__gte=since)
    count = recent.count()
    if count + adding <= limit:
        return
    oldest = recent.order_by("received_at").values_list("received_at", flat=True).first()
    wait = int((oldest + timedelta(hours=1) - timezone.now()).total_seconds()) + 1 if oldest else 60
    raise TrafficLimitReached(
        f"deployment {deployment.name!r} stored {count} trajectories in the last hour; "
        f"{adding} more would pass TRAFFIC_MAX_RECORDS_PER_HOUR ({limit}). Try again in "
        f"{max(1, wait)} s, or post fewer (an admin can raise the limit)",
        retry_after_s=max(1, wait),
    )
