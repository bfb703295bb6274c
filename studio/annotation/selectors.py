"""Reads of annotation: an item's state and settled label, the next item for a person, the agreement
between labellers (Cohen's kappa per dimension, ``evaluation.stats.calibrate``) and how far a judge
is calibrated (its newest ``JudgeCalibration`` against ``settings.JUDGE_MIN_AGREEMENT``).

An item is *open* (no label), *labelled* (one label), *agreed* (two or more, the first two equal on
Accuracy and Effectiveness), *disputed* (the first two differ and no third label yet: back in the
queue), or *settled* (three or more: the majority per dimension, where there is one).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from studio.annotation.models import AnnotationQueue, CaseLabel, JudgeCalibration, QueueItem

OPEN, LABELLED, AGREED, DISPUTED, SETTLED = "open", "labelled", "agreed", "disputed", "settled"


def _labels(item: QueueItem) -> list[CaseLabel]:
    return sorted(item.labels.all(), key=lambda label: (label.created_at, label.pk))


def _same(a: CaseLabel, b: CaseLabel) -> bool:
    return a.accuracy == b.accuracy and a.effectiveness == b.effectiveness


def item_status(*, item: QueueItem) -> str:
    labels = _labels(item)
    if not labels:
        return OPEN
    if len(labels) == 1:
        return LABELLED
    if _same(labels[0], labels[1]):
        return AGREED
    if len(labels) == 2:
        return DISPUTED
    return SETTLED if _majority(labels) is not None else DISPUTED


def _majority(labels: list[CaseLabel]) -> CaseLabel | None:
    """The newest label holding the majority of both dimensions, or None where a dimension has
    none."""
    acc, acc_n = Counter(lb.accuracy for lb in labels).most_common(1)[0]
    eff, eff_n = Counter(lb.effectiveness for lb in labels).most_common(1)[0]
    if 2 * acc_n <= len(labels) or 2 * eff_n <= len(labels):
        return None
    agreeing = [lb for lb in labels if lb.accuracy == acc and lb.effectiveness == eff]
    return agreeing[-1] if agreeing else None


def item_settled(*, item: QueueItem) -> dict[str, Any] | None:
    """The label an export writes: the only one, the first two when they agree, else the majority of
    three or more per dimension (the newest label holding both majorities gives gold and note); None
    while disputed or unlabelled."""
    labels = _labels(item)
    status = item_status(item=item)
    if status in (OPEN, DISPUTED):
        return None
    chosen = (
        labels[-1] if status == LABELLED else labels[1] if status == AGREED else _majority(labels)
    )
    return {
        "accuracy": chosen.accuracy,
        "effectiveness": chosen.effectiveness,
        "category": chosen.category,
        "route": chosen.route,
        "reply_skills": chosen.reply_skills,
        "tools": chosen.tools,
        "note": chosen.note,
    }


def queue_next_item(*, queue: AnnotationQueue, user) -> QueueItem | None:
    """The next item ``user`` should label: a disputed one first (it waits for a third label), then
    one nobody labelled, then one somebody else labelled once (a second opinion, for agreement)."""
    items = [
        i
        for i in queue.items.prefetch_related("labels").order_by("position")
        if all(lb.labeller_id != user.pk for lb in i.labels.all())
    ]
    for wanted in (DISPUTED, OPEN, LABELLED):
        for item in items:
            if item_status(item=item) == wanted:
                return item
    return None


@dataclass
class Agreement:
    n: int  # items two people labelled
    # evaluation.stats.Calibration of the first two labels, or None when n == 0
    accuracy: Any = None
    effectiveness: Any = None


def queue_agreement(*, queue: AnnotationQueue) -> Agreement:
    """Cohen's kappa per dimension between the first and second label of every item labelled
    twice."""
    from evaluation.stats import calibrate

    first_acc, second_acc, first_eff, second_eff = {}, {}, {}, {}
    for item in queue.items.prefetch_related("labels"):
        labels = _labels(item)
        if len(labels) < 2:
            continue
        first_acc[item.case_id], second_acc[item.case_id] = labels[0].accuracy, labels[1].accuracy
        first_eff[item.case_id], second_eff[item.case_id] = (
            labels[0].effectiveness,
            labels[1].effectiveness,
        )
    if not first_acc:
        return Agreement(n=0)
    return Agreement(
        n=len(first_acc),
        accuracy=calibrate(human=first_acc, judge=second_acc, labels=[0, 1]),
        effectiveness=calibrate(human=first_eff, judge=second_eff, labels=[0.0, 0.5, 1.0]),
    )


def queue_counts(*, queue: AnnotationQueue) -> dict[str, int]:
    counts = Counter(item_status(item=i) for i in queue.items.prefetch_related("labels"))
    return {s: counts.get(s, 0) for s in (OPEN, LABELLED, AGREED, DISPUTED, SETTLED)}


# -- judge calibration
# ---------------------------------------------------------------------------------------


@dataclass
class JudgeStanding:
    """How far the studio may trust figures a judge scored: ``ok`` when its current calibration (on
    a set people labelled; ``judge_standing``) agrees with the human labels of its held-out part at
    least ``settings.JUDGE_MIN_AGREEMENT`` on both dimensions."""

    judge: str
    calibration: JudgeCalibration | None
    minimum: float

    @property
    def ok(self) -> bool:
        return self.calibration is not None and self.calibration.lowest_agreement >= self.minimum

    @property
    def status(self) -> str:
        if self.calibration is None:
            return "uncalibrated"
        return "calibrated" if self.ok else "below agreement"

    @property
    def text(self) -> str:
        if self.calibration is None:
            return (
                f"scored by the {self.judge} judge, which has "
                "not been calibrated against human labels (replies people labelled): "
                "calibrate it on the human set before trusting these figures"
            )
        c = self.calibration
        measured = (
            f"Accuracy agreement {100 * c.accuracy_agreement:.1f}% (kappa {c.accuracy_kappa:.2f}), "
            f"Effectiveness {100 * c.effectiveness_agreement:.1f}% "
            f"(kappa {c.effectiveness_kappa:.2f}) "
            f"on {c.n} {'held-out ' if c.part == 'heldout' else ''}labelled replies of "
            f"{c.label_set or c.dataset.name}"
        )
        if self.ok:
            return f"the {self.judge} judge is calibrated: {measured}"
        return (
            f"scored by the {self.judge} judge, whose agreement "
            "with human labels is below the configured "
            f"{100 * self.minimum:.0f}%: {measured}"
        )


def _committed_sha256() -> str | None:
    """The sha256 of the committed human set now on disk (cached by size and mtime)."""
    import hashlib
    from pathlib import Path

    path = Path(settings.JUDGE_CALIBRATION_FILE)
    try:
        stat = path.stat()
    except OSError:
        return None
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if _COMMITTED_CACHE.get("key") != key:
        _COMMITTED_CACHE.update(key=key, sha=hashlib.sha256(path.read_bytes()).hexdigest())
    return _COMMITTED_CACHE["sha"]


_COMMITTED_CACHE: dict[str, Any] = {}


def judge_standing(*, judge: str) -> JudgeStanding:
    """The judge's current calibration: the newest one not retired on the committed human set as
    it is now, else the newest one not retired on any set people labelled in a queue. A calibration
    on an imported or generated set (no label set) never counts."""
    rows = JudgeCalibration.objects.select_related("dataset", "label_set").filter(
        judge=judge, retired_at=None, label_set__isnull=False
    )
    sha = _committed_sha256()
    calibration = (rows.filter(label_set__sha256=sha).first() if sha else None) or rows.first()
    return JudgeStanding(judge=judge, calibration=calibration, minimum=settings.JUDGE_MIN_AGREEMENT)


def queue_list():
    """Every annotation queue by name (what another page offers to add a case to)."""
    return AnnotationQueue.objects.order_by("name")


def calibration_list(*, judge: str | None = None):
    rows = JudgeCalibration.objects.select_related(
        "dataset", "created_by", "label_set", "retired_by"
    )
    return rows.filter(judge=judge) if judge else rows


def label_sets():
    """The sets a calibration may read, newest first: exports of queues and the committed set."""
    from studio.annotation.models import LabelSet

    return LabelSet.objects.select_related("dataset", "export__queue")


# --- what the annotation pages look up ----------------------------------------------------------


def queue_get(*, name: str) -> AnnotationQueue:
    """The queue of this name (``AnnotationQueue.DoesNotExist`` when none)."""
    return AnnotationQueue.objects.get(name=name)


def queue_named(*, name: str) -> AnnotationQueue | None:
    return AnnotationQueue.objects.filter(name=name).first()


def queue_overview() -> dict[str, Any]:
    """The queues page: each queue (newest first) with its counts, the datasets and the newest 50
    finished evaluation runs a queue can be fed from."""
    from studio.evolution.models import Dataset, EvalRun

    return {
        "queues": [(q, queue_counts(queue=q)) for q in AnnotationQueue.objects.all()],
        "datasets": Dataset.objects.order_by("name"),
        "runs": EvalRun.objects.filter(status=EvalRun.SUCCEEDED).select_related(
            "dataset", "version__harness"
        )[:50],
    }


def trajectories_chosen(*, ids: list[int]) -> list:
    """The traffic trajectories of these ids, oldest first."""
    from studio.traffic.models import TrafficTrajectory

    return list(
        TrafficTrajectory.objects.select_related("deployment")
        .filter(pk__in=ids)
        .order_by("received_at")
    )


def eval_run_or_none(*, run_id: int):
    from studio.evolution.models import EvalRun

    return EvalRun.objects.select_related("dataset").filter(pk=run_id).first()


def queue_item_get(*, queue: AnnotationQueue, position: int) -> QueueItem:
    """The queue's item at this position (``QueueItem.DoesNotExist`` when none)."""
    return QueueItem.objects.get(queue=queue, position=position)


def calibration_get(*, calibration_id: int) -> JudgeCalibration:
    """One judge calibration with its dataset, creator, label set and retirer (DoesNotExist)."""
    return JudgeCalibration.objects.select_related(
        "dataset", "created_by", "label_set", "retired_by"
    ).get(pk=calibration_id)
