"""Writes of annotation: queues fed from traffic, a run's failing cases or a dataset; labels;
exports.

An item's *case* is the request in the evaluation case format (``evaluation.cases``) with the gold
the labels will fill in; its *reply* is what is being labelled. An export writes the settled items
(``selectors.item_settled``) as a new dataset through
``studio.evolution.services.datasets.dataset_import``, the one importer, so a labelled set is
checked exactly as an uploaded case file is.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import Max

from studio.annotation.models import AnnotationQueue, CaseLabel, QueueExport, QueueItem
from studio.audit.services import audit_record


class AnnotationError(ValueError):
    """A queue, label or export the studio refuses; the message names the field and what is
    valid."""


EFFECTIVENESS_VALUES = (0.0, 0.5, 1.0)


@transaction.atomic
def queue_create(
    *,
    name: str,
    actor: User,
    description: str = "",
    source: str = "",
    catalogue: dict | None = None,
) -> AnnotationQueue:
    name = name.strip().lower()
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,49}", name):
        raise AnnotationError(
            f"name: use 1-50 of a-z, 0-9, '-' or '_' (e.g. live-room-june), not {name!r}"
        )
    if AnnotationQueue.objects.filter(name=name).exists():
        raise AnnotationError(f"name: a queue called {name!r} exists already")
    queue = AnnotationQueue.objects.create(
        name=name,
        description=description.strip(),
        source=source[:300],
        catalogue=catalogue,
        created_by=actor,
    )
    audit_record(
        actor=actor,
        action="annotation.queue.create",
        target=f"queue {name}",
        data={"source": source},
    )
    return queue


def _add(queue: AnnotationQueue, items: list[dict[str, Any]]) -> int:
    """Append items whose case id the queue does not hold yet; returns how many were added."""
    known = set(queue.items.values_list("case_id", flat=True))
    start = (queue.items.aggregate(m=Max("position"))["m"] or 0) + 1
    rows = []
    for item in items:
        if item["case_id"] in known:
            continue
        known.add(item["case_id"])
        rows.append(QueueItem(queue=queue, position=start + len(rows), **item))
    QueueItem.objects.bulk_create(rows)
    return len(rows)


def traffic_case(*, trajectory) -> dict[str, Any]:
    """A stored trajectory as a case: its request, with the gold left to label (the route it took
    meanwhile)."""
    from evaluation.cases import CASE_FORMAT, REQUEST_FIELDS, category_of_intent

    request = trajectory.record.get("request") or {}
    case_id = trajectory.case_id  # injective: a digest of the (deployment, request id) pair ends it
    case = {
        "format": CASE_FORMAT,
        "id": case_id,
        "set": "traffic",
        "category": category_of_intent(trajectory.category),
        **{k: request[k] for k in REQUEST_FIELDS if k in request and k != "id"},
        "gold": {"route": trajectory.route},
    }
    return case


@transaction.atomic
def queue_add_traffic(*, queue: AnnotationQueue, trajectories, actor: User) -> int:
    items = [
        {
            "case_id": (case := traffic_case(trajectory=t))["id"],
            "case": case,
            "reply": t.reply,
            "route": t.route,
            "trajectory": t.record,
            "origin": f"traffic {t.deployment.name}/{t.request_id}"[:200],
            "provenance": {
                "kind": "traffic",
                "deployment": t.deployment.name,
                "request_id": t.request_id,
            },
            "traffic": t,
        }
        for t in trajectories
    ]
    added = _add(queue, items)
    audit_record(
        actor=actor,
        action="annotation.queue.add",
        target=f"queue {queue.name}",
        data={"from": "traffic", "added": added},
    )
    return added


def _run_reply_item(
    *, case: dict, case_id: str, reply: str, route: str, trajectory, origin: str, provenance: dict
) -> dict[str, Any]:
    """One item of a run's reply, whichever run made it (a studio run or a run folder): the case
    with its gold, the reply, its route and full trajectory, and where it came from."""
    return {
        "case_id": case_id,
        "case": case,
        "reply": reply,
        "route": route if route in ("public", "private", "silent") else "public",
        "trajectory": trajectory,
        "origin": origin[:200],
        "provenance": provenance,
    }


@transaction.atomic
def queue_add_run_failures(*, queue: AnnotationQueue, run, actor: User) -> int:
    """The cases of an evaluation run that did not pass (Accuracy and Effectiveness not both 1)."""
    from studio.evolution.models import DatasetCase

    cases = {c.case_id: c.data for c in DatasetCase.objects.filter(dataset=run.dataset)}
    items = []
    for result in run.results.order_by("id"):
        if result.passed or result.case_id not in cases:
            continue
        items.append(
            _run_reply_item(
                case={k: v for k, v in cases[result.case_id].items() if k != "candidates"},
                case_id=result.case_id,
                reply=result.reply,
                route=result.route,
                trajectory=result.trajectory,
                origin=f"run #{run.pk}",
                provenance={"kind": "studio_run", "run": run.pk, "case_id": result.case_id},
            )
        )
    if queue.catalogue is None and run.dataset.catalogue is not None:
        AnnotationQueue.objects.filter(pk=queue.pk).update(catalogue=run.dataset.catalogue)
        queue.catalogue = run.dataset.catalogue
    added = _add(queue, items)
    audit_record(
        actor=actor,
        action="annotation.queue.add",
        target=f"queue {queue.name}",
        data={"from": f"run #{run.pk}", "added": added},
    )
    return added


def _catalogue_data(catalogue: dict | None) -> dict:
    from harness.livestream import demo_catalogue

    return catalogue if catalogue is not None else demo_catalogue().to_dict()


@transaction.atomic
def queue_add_run_folder(*, queue: AnnotationQueue, run, actor: User | None) -> int:
    """Every reply of a finished run folder (``evaluation.calibration.run_replies``), each case id
    suffixed with the run's name; a case set on another catalogue than the queue's is refused."""
    catalogue = run.catalogue.to_dict() if run.catalogue is not None else None
    if queue.items.exists() and _catalogue_data(catalogue) != _catalogue_data(queue.catalogue):
        raise AnnotationError(
            f"run: {run.name}'s cases ({run.set_path}) use another product catalogue than queue "
            f"{queue.name}'s items; put them in another queue"
        )
    earlier = queue.items.filter(provenance__run=run.name).first()
    if earlier is not None and earlier.provenance.get("started_at") != run.started_at:
        raise AnnotationError(
            f"run: queue {queue.name} holds replies of another run folder named {run.name!r} "
            f"(started {earlier.provenance.get('started_at')}); rename this one"
        )
    if not queue.items.exists():
        AnnotationQueue.objects.filter(pk=queue.pk).update(catalogue=catalogue)
        queue.catalogue = catalogue
    origin = f"run {run.name} ({run.policy}, {run.harness})"
    items = [
        _run_reply_item(
            **{k: v for k, v in r.items() if k != "provenance"},
            origin=origin,
            provenance=r["provenance"],
        )
        for r in run.replies
    ]
    added = _add(queue, items)
    audit_record(
        actor=actor,
        action="annotation.queue.add",
        target=f"queue {queue.name}",
        data={"from": f"run folder {run.name}", "policy": run.policy, "added": added},
    )
    return added


@transaction.atomic
def queue_add_dataset(*, queue: AnnotationQueue, dataset, actor: User, limit: int = 200) -> int:
    """A dataset's cases; the reply labelled is a case's first candidate reply, where it has one."""
    items = []
    for row in dataset.cases.order_by("position")[:limit]:
        candidate = next(iter(row.data.get("candidates") or []), None) or {}
        items.append(
            {
                "case_id": row.case_id,
                "case": row.data,
                "reply": candidate.get("reply", ""),
                "route": candidate.get("route", "public"),
                "trajectory": None,
                "origin": f"dataset {dataset.name}",
                "provenance": {"kind": "dataset", "dataset": dataset.name, "case_id": row.case_id},
            }
        )
    if queue.catalogue is None and dataset.catalogue is not None:
        AnnotationQueue.objects.filter(pk=queue.pk).update(catalogue=dataset.catalogue)
        queue.catalogue = dataset.catalogue  # an export from this object names the same catalogue
    added = _add(queue, items)
    audit_record(
        actor=actor,
        action="annotation.queue.add",
        target=f"queue {queue.name}",
        data={"from": f"dataset {dataset.name}", "added": added},
    )
    return added


def _names(text: str | list, field: str) -> list[str]:
    names = text if isinstance(text, list) else re.split(r"[,\s]+", text or "")
    names = [n.strip() for n in names if n.strip()]
    bad = [n for n in names if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,80}", n)]
    if bad:
        raise AnnotationError(
            f"{field}: {bad[0]!r} is not a name; list names separated by commas, e.g. item_qa"
        )
    return list(dict.fromkeys(names))


def label_save(
    *,
    item: QueueItem,
    labeller: User,
    accuracy: Any,
    effectiveness: Any,
    category: str,
    route: str,
    reply_skills: str | list = "",
    tools: str | list = "",
    note: str = "",
) -> CaseLabel:
    """One person's label of one item (a second save by the same person replaces theirs)."""
    from evaluation.cases import CATEGORIES, ROUTES

    if str(accuracy) not in ("0", "1"):
        raise AnnotationError(
            f"accuracy: 1 when every fact the reply states is supported, else 0; got {accuracy!r}"
        )
    try:
        eff = float(effectiveness)
    except (TypeError, ValueError):
        eff = -1.0
    if eff not in EFFECTIVENESS_VALUES:
        raise AnnotationError(f"effectiveness: 0, 0.5 or 1; got {effectiveness!r}")
    if category not in CATEGORIES:
        raise AnnotationError(f"category: one of {', '.join(CATEGORIES)}; got {category!r}")
    if route not in ROUTES:
        raise AnnotationError(f"route: one of {', '.join(ROUTES)}; got {route!r}")
    values = {
        "accuracy": int(accuracy),
        "effectiveness": eff,
        "category": category,
        "route": route,
        "reply_skills": _names(reply_skills, "reply_skills"),
        "tools": _names(tools, "tools"),
        "note": note.strip()[:2000],
    }
    with transaction.atomic():
        label, _ = CaseLabel.objects.update_or_create(item=item, labeller=labeller, defaults=values)
    return label


def _export_case(item: QueueItem, label: dict[str, Any]) -> dict[str, Any]:
    case = {k: v for k, v in item.case.items() if k != "candidates"}
    gold = dict(case.get("gold") or {})
    gold["route"] = label["route"]
    if label["reply_skills"]:
        gold["reply_skills"] = label["reply_skills"]
    if label["tools"]:
        gold["tool_calls"] = [{"name": name} for name in label["tools"]]
    case.update(format="hs-case/1", id=item.case_id, category=label["category"], gold=gold)
    human = {"accuracy": label["accuracy"], "effectiveness": label["effectiveness"]}
    if label["note"]:
        human["reason"] = label["note"]
    candidate = {"id": "labelled", "reply": item.reply, "route": item.route, "human": human}
    if item.trajectory:
        candidate["trajectory"] = item.trajectory
    case["candidates"] = [candidate]
    return case


def _label_row(label: CaseLabel) -> dict[str, Any]:
    return {
        "labeller": label.labeller.username,
        "labelled_at": label.created_at.isoformat(timespec="seconds"),
        "accuracy": label.accuracy,
        "effectiveness": label.effectiveness,
        "category": label.category,
        "route": label.route,
        "note": label.note,
    }


def _previous_parts(queue: AnnotationQueue) -> dict[str, str]:
    """The split the queue's newest export recorded ({case digest: part}): it is kept."""
    from evaluation.calibration import parse_calibration_text

    last = queue.exports.select_related("label_set").first()
    label_set = getattr(last, "label_set", None) if last else None
    if label_set is None:
        return {}
    rows = parse_calibration_text(label_set.content, source=f"{queue.name} v{last.version}").rows
    return {row["digest"]: row["part"] for row in rows}


@transaction.atomic
def queue_export(*, queue: AnnotationQueue, actor: User, heldout_share: float = 0.2) -> QueueExport:
    """The queue's settled items as a new dataset ``<queue>-v<N>`` (each case's gold from its labels
    and its labelled reply as a candidate with the human labels) and its calibration file
    (``hs-calibration/1``: every label with who and when, the item's origin, the dev / held-out
    split by case digest, kept from the previous version; ``evaluation.calibration``)."""
    from django.utils import timezone

    from evaluation.calibration import HELDOUT_SHARE, assign_parts, calibration_text, case_digest
    from evaluation.cases import CaseFileError
    from studio.annotation.models import LabelSet
    from studio.annotation.selectors import item_settled
    from studio.evolution.errors import EvolutionError
    from studio.evolution.services.datasets import dataset_import

    cases, rows = [], []
    items = queue.items.prefetch_related("labels__labeller").order_by("position")
    for item in items:
        settled = item_settled(item=item)
        if settled is None:
            continue
        case = _export_case(item, settled)
        cases.append(case)
        rows.append(
            {
                "case": case,
                "digest": case_digest(case),
                "labels": [
                    _label_row(lb) for lb in sorted(item.labels.all(), key=lambda x: x.created_at)
                ],
                "origin": {
                    "queue": queue.name,
                    "item": item.position,
                    "origin": item.origin,
                    **(item.provenance or {}),
                },
            }
        )
    if not cases:
        raise AnnotationError(
            f"queue {queue.name}: no item has a settled label yet; label some first"
        )
    version = (queue.exports.aggregate(m=Max("version"))["m"] or 0) + 1
    parts = assign_parts([r["digest"] for r in rows], previous=_previous_parts(queue))
    for row in rows:
        row["part"] = parts[row["digest"]]
    content = calibration_text(
        header={
            "name": queue.name,
            "queue": queue.name,
            "version": version,
            "exported_at": timezone.now().isoformat(timespec="seconds"),
            "exported_by": actor.username if actor else "",
            "catalogue": queue.catalogue,
            "split": {
                "by": "sha256 of each case's request (its request fields but the id)",
                "heldout_share_at_least": round(HELDOUT_SHARE, 4),
                "kept_from_version": version - 1 if version > 1 else None,
            },
        },
        rows=rows,
    )
    try:
        dataset = dataset_import(
            name=f"{queue.name}-v{version}",
            text="\n".join(json.dumps(c) for c in cases),
            source=f"annotation queue {queue.name} v{version}",
            actor=actor,
            catalogue=queue.catalogue,
            heldout_share=heldout_share,
            description=f"{len(cases)} cases labelled by people in queue {queue.name}",
        )
    except (EvolutionError, CaseFileError) as error:
        raise AnnotationError(str(error)) from None
    export = QueueExport.objects.create(
        queue=queue, version=version, dataset=dataset, items=len(cases), created_by=actor
    )
    LabelSet.objects.create(
        dataset=dataset,
        export=export,
        sha256=hashlib.sha256(content.encode()).hexdigest(),
        header=json.loads(content.split("\n", 1)[0]),
        content=content,
    )
    audit_record(
        actor=actor,
        action="annotation.queue.export",
        target=f"queue {queue.name}",
        data={"dataset": dataset.name, "cases": len(cases)},
    )
    return export


def label_set_load(*, path, actor: User | None = None):
    """The committed calibration file at ``path`` as a label set (read once per content: the same
    sha256 gives the same set). CalibrationFileError when it is not one."""
    from pathlib import Path

    from django.conf import settings

    from evaluation.calibration import parse_calibration_text
    from studio.annotation.models import LabelSet
    from studio.evolution.services.datasets import dataset_import

    path = Path(path)
    content = path.read_text(encoding="utf-8")
    sha = hashlib.sha256(content.encode()).hexdigest()
    found = LabelSet.objects.filter(sha256=sha, export=None).first()
    if found is not None:
        return found
    calibration = parse_calibration_text(content, source=str(path))
    try:
        shown = str(path.resolve().relative_to(Path(settings.BASE_DIR)))
    except ValueError:
        shown = str(path)
    with transaction.atomic():
        dataset = dataset_import(
            name=f"human-{sha[:12]}",
            text="\n".join(json.dumps(c) for c in calibration.cases()),
            source=shown[:300],
            actor=actor,
            catalogue=calibration.header.get("catalogue"),
            description=(
                f"The committed human set {shown} (version {calibration.header.get('version')}, "
                f"{len(calibration.rows)} labelled replies)"
            ),
        )
        return LabelSet.objects.create(
            dataset=dataset,
            path=shown[:300],
            sha256=sha,
            header=calibration.header,
            content=content,
        )
