"""Judges: programmatic (catalogue + trajectory checks), LLM over any model route, panel.

``make_judge(spec, catalogue=...)`` builds one from a spec string:
``programmatic``; ``llm:MODEL`` where MODEL is ``BASE_URL:MODEL`` (an OpenAI-compatible server, for
example ``llm:http://localhost:8000/v1:qwen``) or any policy spec (``llm:local``, ``llm:torch:DIR``,
``llm:openai:BASE_URL:MODEL``); ``panel:SPEC|SPEC|SPEC`` (majority vote of the listed judges).
An LLM judge's model is the judge role's (``harness.policies.role_model``): its timeout, retries and
usage record are set there. ``judge_model`` turns what follows ``llm`` into that model: by default
the CLIs' reading above; the studio's reads its endpoint registry (``studio/endpoints``).
"""

from __future__ import annotations

from collections.abc import Callable

from evaluation.judges.base import Judge, Reason, Verdict
from evaluation.judges.llm import LLMJudge
from evaluation.judges.panel import PanelJudge
from evaluation.judges.programmatic import ProgrammaticJudge
from harness.livestream.catalogue import Catalogue
from harness.policies import RoleModel, role_model

__all__ = [
    "Judge",
    "JudgeSpecError",
    "LLMJudge",
    "PanelJudge",
    "ProgrammaticJudge",
    "Reason",
    "Verdict",
    "make_judge",
]


class JudgeSpecError(ValueError):
    """A judge spec ``make_judge`` cannot read; the message says what is valid (the CLIs print it
    as one line, the studio as the judge field's error)."""


JUDGE_SPECS = "programmatic, llm:BASE_URL:MODEL, llm:POLICY_SPEC, panel:A|B|C"
# A panel lists judges, not panels, and at most this many (a spec of ``panel:`` repeated 3,000 times
# once recursed until Python gave up: a 500 in the studio).
PANEL_MAX_JUDGES = 9
PANEL_EXAMPLE = "panel:programmatic|llm|llm"


def cli_judge_model(target: str) -> RoleModel:
    """The CLIs' reading of ``llm:TARGET``: an OpenAI-compatible ``BASE_URL:MODEL`` or a policy
    spec."""
    if not target:
        raise ValueError(
            "judge spec 'llm' names no model: write llm:BASE_URL:MODEL "
            "(e.g. llm:http://localhost:8000/v1:qwen) or llm:POLICY_SPEC (e.g. llm:local)"
        )
    return role_model("judge", target)


def make_judge(
    spec: str,
    *,
    catalogue: Catalogue,
    max_reply_chars: int = 220,
    judge_model: Callable[[str], RoleModel] = cli_judge_model,
) -> Judge:
    """Build a judge from ``programmatic`` | ``llm[:TARGET]`` | ``panel:A|B|C``;
    ``judge_model(TARGET)`` is an LLM judge's model (TARGET empty for a bare ``llm``)."""
    if spec == "programmatic":
        return ProgrammaticJudge(catalogue=catalogue, max_reply_chars=max_reply_chars)
    if spec.startswith("panel:"):
        parts = [p for p in spec[len("panel:") :].split("|") if p]
        if not parts:
            raise JudgeSpecError(f"judge spec 'panel:' lists no judge; write e.g. {PANEL_EXAMPLE}")
        if any(p == "panel" or p.startswith("panel:") for p in parts):
            raise JudgeSpecError(
                f"judge spec {spec[:60]!r}{'...' if len(spec) > 60 else ''}: a panel lists "
                "judges, not panels; "
                f"write e.g. {PANEL_EXAMPLE}"
            )
        if len(parts) > PANEL_MAX_JUDGES:
            raise JudgeSpecError(
                f"judge spec: a panel of {len(parts)} judges; at most {PANEL_MAX_JUDGES}"
            )
        return PanelJudge(
            judges=[
                make_judge(
                    p, catalogue=catalogue, max_reply_chars=max_reply_chars, judge_model=judge_model
                )
                for p in parts
            ]
        )
    if spec == "llm" or spec.startswith("llm:"):
        try:
            model = judge_model(spec[len("llm:") :])
        except ValueError as error:
            raise JudgeSpecError(f"judge spec {spec[:80]!r}: {error}") from None
        return LLMJudge(model=model, catalogue=catalogue)
    raise JudgeSpecError(f"unknown judge {spec[:80]!r}; valid: {JUDGE_SPECS}")
