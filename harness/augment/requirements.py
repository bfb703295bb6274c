"""What a variant must keep so that a case's gold labels stay valid under it.

An evaluation case (and, when there is one, its gold trajectory) needs some
skills to exist, some limits not to shrink below what the gold reply uses, and
some names to stay free. :func:`requirements_from_case` reads those needs
from the case's JSON (the ``hs-case/1`` format; no import of the evaluation
package is needed) and the transforms honour them on top of the envelope.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Requirements:
    """Needs of the gold labels a variant must serve (parent names)."""

    skills: frozenset[str] = frozenset()  # never masked
    reply_chars: int = 0  # length limits stay at or above this
    rounds: int = 0  # max_rounds stays at or above this
    tool_calls: int = 0  # tool-call budgets stay at or above this
    retries: int = 0  # retry budget stays at or above this
    input_chars: int = 0  # per-comment input limits stay at or above this
    prompt_chars: int = 0  # context budgets stay at or above this (with headroom)
    texts: tuple[str, ...] = ()  # added banned phrases must not occur in these
    reserved_names: frozenset[str] = field(default_factory=frozenset)  # names not to introduce

    def merge(self, other: Requirements) -> Requirements:
        return Requirements(
            skills=self.skills | other.skills,
            reply_chars=max(self.reply_chars, other.reply_chars),
            rounds=max(self.rounds, other.rounds),
            tool_calls=max(self.tool_calls, other.tool_calls),
            retries=max(self.retries, other.retries),
            input_chars=max(self.input_chars, other.input_chars),
            prompt_chars=max(self.prompt_chars, other.prompt_chars),
            texts=self.texts + other.texts,
            reserved_names=self.reserved_names | other.reserved_names,
        )


def requirements_from_case(
    case: dict, *, trajectory: dict | None = None, load_tools: tuple[str, ...] = ("load_skill",)
) -> Requirements:
    """The needs of one case's gold labels (and of its recorded gold trajectory, if given)."""
    gold = case.get("gold") or {}
    skills = set(gold.get("reply_skills") or []) | set(gold.get("strategy_skills") or [])
    calls = list(gold.get("tool_calls") or [])
    for call in calls:
        if call.get("name") in load_tools:
            skills |= {v for v in (call.get("arguments") or {}).values() if isinstance(v, str)}
    texts = [gold.get("reference_reply") or ""]
    rounds = retries = prompt_chars = 0
    if trajectory:
        texts.append(str(trajectory.get("reply") or ""))
        for load in trajectory.get("skill_loads") or []:
            name = (
                load
                if isinstance(load, str)
                else ((load or {}).get("skill") or (load or {}).get("name"))
            )
            if isinstance(name, str):
                skills.add(name)
        calls = (
            calls
            if len(calls) >= len(trajectory.get("tool_calls") or [])
            else list(trajectory.get("tool_calls") or [])
        )
        rounds = int(trajectory.get("rounds") or len(trajectory.get("model_calls") or []))
        prompt_chars = max(
            (
                sum(len(str(m.get("content") or "")) for m in mc.get("messages") or [])
                for mc in trajectory.get("model_calls") or []
            ),
            default=0,
        )
        retries = sum(
            1
            for d in trajectory.get("hook_decisions") or []
            if isinstance(d, dict)
            and d.get("event") == "stop"
            and d.get("decision") in ("block", "retry")
        )
    comments = case.get("comments") or []
    input_chars = max(
        (
            len((c if isinstance(c, str) else str((c or {}).get("text", ""))).strip())
            for c in comments
        ),
        default=0,
    )
    return Requirements(
        skills=frozenset(skills),
        reply_chars=max((len(t) for t in texts), default=0),
        rounds=rounds,
        tool_calls=len(calls),
        retries=retries,
        input_chars=input_chars,
        prompt_chars=prompt_chars,
        texts=tuple(t for t in texts if t),
        reserved_names=frozenset(
            t.get("name")
            for t in case.get("extra_tools") or []
            if isinstance(t, dict) and isinstance(t.get("name"), str)
        ),
    )
