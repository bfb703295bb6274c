"""What the failing trajectories show, so that a diagnoser proposes only the edits they support.

A Harness edit changes what the runtime gives the model or checks: a skill's
rules are read only when the skill is loaded; a stop hook acts only on a reply
that reached the stop gate; one more round or more time helps only a model that
was still doing new work when the limit stopped it. ``edit_evidence`` returns
the sentence that backs one edit from its targeted cases, or None when they
show nothing the edit would act on.

``model_not_harness`` is the finding when no failing trajectory used the
Harness at all (no tool call and no skill load in any round): the failures are
the model's, not the Harness's, and no Harness edit is proposed.
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluation.diagnosis.edits import (
    AddHook,
    AddRefusalExclusion,
    AddSkillRule,
    ChangeSkillRule,
    Edit,
    RequireToolCall,
    SetConstraint,
    TightenHook,
)
from evaluation.diagnosis.records import FailureCase
from harness.bundle import Bundle

MODEL_NOT_HARNESS = "the model, not the Harness"
LIMITS = {"max_rounds": "round limit", "trajectory_budget_s": "trajectory budget"}


def model_not_harness(failures: Sequence[FailureCase]) -> str:
    """The finding when no failing case called a tool or loaded a skill in any round; else ""."""
    if not failures or any(c.used_harness for c in failures):
        return ""
    rounds = sum(c.rounds for c in failures)
    return (
        f"{MODEL_NOT_HARNESS}: none of the {len(failures)} "
        "failing case(s) called a tool or loaded a "
        f"skill in any of their {rounds} model round(s), "
        "so no skill, hook or budget edit changes what "
        "the model does; train the model or choose another endpoint, then diagnose again"
    )


def _share(cases: Sequence[FailureCase], hits: Sequence[FailureCase]) -> str:
    return f"{len(hits)} of {len(cases)} targeted case(s)"


def _reached_stop_gate(case: FailureCase, bundle: Bundle) -> bool:
    """A reply came through: it was given, or one of the Harness's own hooks checked and blocked
    it."""
    hooks = {h.id for h in bundle.hooks}
    return case.outcome == "replied" or any(h in hooks for h in case.hooks_blocked)


def _limit_evidence(edit: SetConstraint, cases: Sequence[FailureCase]) -> str | None:
    limit = LIMITS[edit.name]
    stopped = [
        c
        for c in cases
        if c.outcome in ("fallback", "suppressed")
        and (
            "budget" in c.outcome_reason.lower()
            if edit.name == "trajectory_budget_s"
            else "round limit" in c.outcome_reason.lower()
        )
    ]
    working = [c for c in stopped if c.progressing_when_stopped]
    if not working:
        return None
    return (
        f"{_share(cases, working)} were making a new tool call or skill load in their last round "
        f"when the {limit} stopped them"
    )


def edit_evidence(edit: Edit, *, cases: Sequence[FailureCase], bundle: Bundle) -> str | None:
    """Why the targeted ``cases`` show that ``edit`` acts on them, or None when they do not."""
    if isinstance(edit, SetConstraint) and edit.name in LIMITS:
        return _limit_evidence(edit, cases)
    if isinstance(edit, AddSkillRule | ChangeSkillRule | AddRefusalExclusion):
        loaded = [c for c in cases if edit.skill in c.skills_loaded]
        return (
            f"{_share(cases, loaded)} loaded skill {edit.skill}, which reads the rule"
            if loaded
            else None
        )
    if isinstance(edit, RequireToolCall):
        unchecked = [
            c for c in cases if c.outcome == "replied" and not set(edit.tools) & set(c.tools_called)
        ]
        return (
            f"{_share(cases, unchecked)} replied without calling {' or '.join(edit.tools)}"
            if unchecked
            else None
        )
    if isinstance(edit, TightenHook):
        fired = [c for c in cases if edit.hook_id in c.hooks_blocked]
        if fired:
            return f"hook {edit.hook_id} blocked {_share(cases, fired)}"
    if isinstance(edit, AddHook | TightenHook | SetConstraint):  # stop checks and reply constraints
        replies = [c for c in cases if _reached_stop_gate(c, bundle)]
        return f"{_share(cases, replies)} reached the stop gate with a reply" if replies else None
    return None
