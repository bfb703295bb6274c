"""Release gates as pure rules over typed evidence (docs/architecture.md §5).

The studio decides promotions and releases on four kinds of evidence, each written by one part of
the system and read here by one reader:

- an evolution stage's paired comparison (``evaluation.compare.paired_comparison``):
  :func:`read_comparison`;
- a deployment replay's record (its ``replay`` block): ``serving.record.read_replay_timing``, beside
  the record's writer (this library imports no serving code);
- an evaluation run's instruction-following scores (``training.self_eval``, the ``ifeval`` block of
  its summary, with its base model's answers to the same prompts): :func:`read_ifeval`;
- a compatibility cell's change against the production pair
  (``evaluation.compatibility.cell_change``): :func:`read_cell_change`.

A reader returns a frozen record or raises :class:`EvidenceError` naming the source, the field and
what it expected: a shape it does not know is an error the gate shows ("unreadable", which blocks),
never a quiet "no data". The rules below take only those records and numbers, touch no database and
are the one definition of each gate's verdict; ``studio.gates`` finds the evidence through
each app's selectors and words the gates for a page.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

LATENCY_BOUND_S = 15.0
# paired bootstrap of the capability gate (a gate is read on every release page)
CAPABILITY_RESAMPLES = 2000
#: The largest loss of IFE-P strict (percentage points, checkpoint minus its base) the capability
#: gate lets pass; the paired interval must rule out any larger one.
CAPABILITY_TOLERANCE_POINTS = 5.0
NOT_ENOUGH_DATA = "not enough data"
UNREADABLE = "unreadable"
#: pass | fail | no data | not enough data | unreadable; everything but "pass" blocks a promotion.
STATUSES = ("pass", "fail", "no data", NOT_ENOUGH_DATA, UNREADABLE)


class EvidenceError(ValueError):
    """Evidence of a shape its reader does not know: names the source, the field and what was
    expected."""


@dataclass
class Gate:
    name: str
    status: str  # one of STATUSES
    detail: str
    run_id: int | None = None  # the studio run (TrainingRun) whose result fed the gate
    stage_id: int | None = None  # the evolution stage whose comparison fed the business gate
    # its figures were scored by the evaluation judge (the judge-calibration gate reads it)
    judged: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Gate:
        return cls(
            name=data["name"],
            status=data["status"],
            detail=data["detail"],
            run_id=data.get("run_id"),
            stage_id=data.get("stage_id"),
            judged=data.get("judged", False),
        )


# -- readers: one per evidence source
# ------------------------------------------------------------------------


def field_of(data: Any, path: str, kind: type | tuple[type, ...], source: str) -> Any:
    """``data``'s field at the dotted ``path``, of type ``kind``; EvidenceError naming what is
    wrong."""
    value = data
    walked = []
    for key in path.split("."):
        walked.append(key)
        if not isinstance(value, dict) or key not in value:
            raise EvidenceError(
                f"{source}: no field {'.'.join(walked)!r} (expected {_kind_name(kind)} at "
                f"{path!r}); this studio reads another shape of it"
            )
        value = value[key]
    if (
        isinstance(value, bool)
        and kind is not bool
        and bool not in (kind if isinstance(kind, tuple) else (kind,))
    ):
        raise EvidenceError(f"{source}: field {path!r} is a boolean, expected {_kind_name(kind)}")
    if not isinstance(value, kind):
        raise EvidenceError(
            f"{source}: field {path!r} is {type(value).__name__} {value!r:.60}, expected "
            f"{_kind_name(kind)}"
        )
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {
        "int": "a number",
        "float": "a number",
        "str": "a string",
        "dict": "an object",
        "list": "a list",
        "bool": "true/false",
    }
    return " or ".join(dict.fromkeys(names.get(k.__name__, k.__name__) for k in kinds))


NUMBER = (int, float)


@dataclass(frozen=True)
class Comparison:
    """An evolution stage's paired comparison of a candidate with its parent (AVG deltas in
    points)."""

    overall_delta: float
    category_deltas: dict[str, float]
    errors_candidate: int
    n: int


def read_comparison(data: dict[str, Any], *, source: str) -> Comparison | None:
    """The comparison a stage keeps (``evaluation.compare.paired_comparison``); None where it has
    none yet."""
    if not data:
        return None
    per_category = field_of(data, "per_category", dict, source)
    return Comparison(
        overall_delta=float(field_of(data, "overall.avg.delta", NUMBER, source)),
        category_deltas={
            cat: float(field_of(block, "avg.delta", NUMBER, f"{source}, per_category[{cat!r}]"))
            for cat, block in per_category.items()
        },
        errors_candidate=int(field_of(data, "overall.errors_candidate", NUMBER, source)),
        n=int(field_of(data, "overall.n", NUMBER, source)),
    )


@dataclass(frozen=True)
class ReplayTiming:
    """A replay's wall P95 per concurrency level (None: no successful request to time) and its
    fallback warning (``serving.metrics.fallback_warning``: most requests at some level fell back;
    "" otherwise), as ``serving.record.read_replay_timing`` reads them."""

    wall_p95_s: dict[str, float | None]
    fallback_warning: str
    harness_digest: str


@dataclass(frozen=True)
class IFEvalAnswers:
    """One model's instruction-following scores on a set of prompts (prompt-level strict,
    percent)."""

    prompt_strict: float
    per_prompt: tuple[bool, ...]
    model: str = ""


@dataclass(frozen=True)
class IFEvalScores:
    """A checkpoint's instruction-following scores and, where it has one, its base model's on the
    same prompts."""

    checkpoint: IFEvalAnswers
    n: int
    set_label: str
    base: IFEvalAnswers | None


def _answers(data: dict[str, Any], source: str, *, model: str = "") -> IFEvalAnswers:
    per_prompt = field_of(data, "per_prompt", list, source)
    if not all(isinstance(v, bool | int) for v in per_prompt):
        raise EvidenceError(f"{source}: field 'per_prompt' holds something other than true/false")
    return IFEvalAnswers(
        prompt_strict=float(field_of(data, "prompt_strict", NUMBER, source)),
        per_prompt=tuple(bool(v) for v in per_prompt),
        model=model,
    )


def read_ifeval(data: dict[str, Any], *, source: str) -> IFEvalScores | None:
    """The ``ifeval`` block of an evaluation summary (``training.self_eval.evaluate_model``); None
    where the set failed (the block is ``{"error": ...}``: nothing was measured)."""
    if not isinstance(data, dict):
        raise EvidenceError(
            f"{source}: the ifeval block is {type(data).__name__}, expected an object"
        )
    if "error" in data and "prompt_strict" not in data:
        return None
    base = data.get("base")
    if base is not None and not isinstance(base, dict):
        raise EvidenceError(
            f"{source}: field 'base' is {type(base).__name__}, expected an object or null"
        )
    label = (data.get("set") or {}).get("label") if isinstance(data.get("set"), dict) else None
    return IFEvalScores(
        checkpoint=_answers(data, source),
        n=int(field_of(data, "n", NUMBER, source)),
        set_label=label or "instruction-following prompts",
        base=_answers(base, f"{source} base", model=str(base.get("model") or "")) if base else None,
    )


@dataclass(frozen=True)
class PairedChange:
    """A compatibility cell's AVG against the production pair's on the same cases (points, 95%
    interval)."""

    verdict: str  # better | same | worse (``evaluation.compatibility``)
    n: int
    candidate: float
    parent: float
    delta: float
    low: float
    high: float


def read_cell_change(data: dict[str, Any], *, source: str) -> PairedChange:
    """``evaluation.compatibility.cell_change``'s record."""
    return PairedChange(
        verdict=field_of(data, "verdict", str, source),
        n=int(field_of(data, "n", NUMBER, source)),
        **{
            k: float(field_of(data, f"avg.{k}", NUMBER, source))
            for k in ("candidate", "parent", "delta", "low", "high")
        },
    )


# -- rules: pure functions of the records
# -----------------------------------------------------------------------


def business_verdict(comparison: Comparison, *, tolerance: float) -> tuple[str, str]:
    """Fail when any category's AVG drops more than ``tolerance`` (a share: 0.02 is 2 points)."""
    drops = {
        cat: delta for cat, delta in comparison.category_deltas.items() if delta < -100 * tolerance
    }
    if drops:
        shown = ", ".join(f"{k} {v:+.2f}" for k, v in sorted(drops.items()))
        return "fail", f"AVG drops beyond the {100 * tolerance:.1f}-point tolerance: {shown}"
    return "pass", f"no category's AVG drops more than {100 * tolerance:.1f} points"


def worst_level(timing: ReplayTiming) -> tuple[str, float] | None:
    """(concurrency, P95 s) of the replay's slowest level: the level the per-request SLA is judged
    on."""
    levels = [(level, p95) for level, p95 in timing.wall_p95_s.items() if p95 is not None]
    return max(levels, key=lambda item: item[1]) if levels else None


def latency_verdict(timing: ReplayTiming, *, bound_s: float = LATENCY_BOUND_S) -> tuple[str, str]:
    """Fail when most requests fell back at some level (it timed the fallback, not answers) or the
    worst level's wall P95 exceeds ``bound_s``; "no data" when no request succeeded."""
    worst = worst_level(timing)
    if worst is None:
        return "no data", "no successful request to time; its levels have no wall P95"
    if timing.fallback_warning:
        return "fail", f"{timing.fallback_warning}; the gate needs answers to time"
    level, p95 = worst
    return ("pass" if p95 <= bound_s else "fail"), (
        f"worst level C={level}: wall P95 {p95:.2f} s (bound {bound_s:g} s per request)"
    )


@dataclass(frozen=True)
class CapabilityChange:
    """The checkpoint minus its base on the same prompts (IFE-P strict points, paired bootstrap 95%
    interval)."""

    delta: float
    low: float
    high: float
    n: int
    base_model: str
    base_strict: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def capability_comparison(scores: IFEvalScores) -> CapabilityChange | None:
    """The paired change of ``scores`` against its base; None where the base did not answer the same
    prompts."""
    base = scores.base
    mine = scores.checkpoint.per_prompt
    if base is None or not mine or len(mine) != len(base.per_prompt):
        return None
    from evaluation.stats import paired_bootstrap

    result = paired_bootstrap(
        baseline=[100.0 * v for v in base.per_prompt],
        candidate=[100.0 * v for v in mine],
        resamples=CAPABILITY_RESAMPLES,
    )
    return CapabilityChange(
        delta=result.delta,
        low=result.low,
        high=result.high,
        n=result.n,
        base_model=base.model,
        base_strict=base.prompt_strict,
    )


def capability_verdict(paired: CapabilityChange) -> tuple[str, str]:
    """Fail when the whole interval lies below zero; pass when it rules out a loss of more than
    ``CAPABILITY_TOLERANCE_POINTS`` (the measured drop included); otherwise the prompts are too few
    to decide."""
    if paired.high < 0:
        return "fail", "fewer instructions followed than its base, beyond chance"
    worst = min(paired.low, paired.delta)
    if worst >= -CAPABILITY_TOLERANCE_POINTS:
        return "pass", f"a loss of more than {CAPABILITY_TOLERANCE_POINTS:g} points is ruled out"
    return NOT_ENOUGH_DATA, (
        f"{NOT_ENOUGH_DATA}: on {paired.n} prompts the interval still allows a loss of "
        f"{-worst:.1f} points, more than the {CAPABILITY_TOLERANCE_POINTS:g} allowed; evaluate "
        "the checkpoint on more instruction-following prompts"
    )


def compatibility_verdict(change: PairedChange) -> str:
    """Fail only when the cell is worse than the production pair's beyond the paired interval."""
    return "fail" if change.verdict == "worse" else "pass"


def gates_blocking(gates: list[Gate]) -> list[Gate]:
    """The gates that stop a promotion to production: every one that did not pass."""
    return [g for g in gates if g.status != "pass"]


def gates_check_promotion(
    *,
    gates: list[Gate],
    override_reason: str,
    action: str = "Promotion to production",
    verb: str = "promote",
) -> list[Gate]:
    """The blocking gates a promotion (or a release's approval: ``action``, ``verb``) goes through
    with; ValueError naming them when there is no override reason."""
    blocking = gates_blocking(gates)
    if blocking and not override_reason.strip():
        shown = "; ".join(f"{g.name}: {g.status} ({g.detail})" for g in blocking)
        raise ValueError(
            f"release gates did not pass: {shown}. {action} needs every gate to pass; "
            f"to {verb} anyway, a reviewer must write why in the override reason"
        )
    return blocking
