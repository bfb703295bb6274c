"""Judges: programmatic (catalogue + trajectory checks), LLM over an OpenAI-compatible endpoint, panel.

``make_judge(spec, catalogue=...)`` builds one from a spec string:
``programmatic``; ``llm:BASE_URL:MODEL`` (for example ``llm:http://localhost:8000/v1:qwen``);
``panel:SPEC|SPEC|SPEC`` (majority vote of the listed judges).
"""

from __future__ import annotations

from evaluation.judges.base import Judge, Reason, Verdict
from evaluation.judges.llm import LLMJudge
from evaluation.judges.panel import PanelJudge
from evaluation.judges.programmatic import ProgrammaticJudge
from harness.livestream.catalogue import Catalogue

__all__ = ["Judge", "LLMJudge", "PanelJudge", "ProgrammaticJudge", "Reason", "Verdict", "make_judge"]


def make_judge(spec: str, *, catalogue: Catalogue, max_reply_chars: int = 220) -> Judge:
    """Build a judge from ``programmatic`` | ``llm:BASE_URL:MODEL`` | ``panel:A|B|C``."""
    if spec == "programmatic":
        return ProgrammaticJudge(catalogue=catalogue, max_reply_chars=max_reply_chars)
    if spec.startswith("panel:"):
        parts = [p for p in spec[len("panel:"):].split("|") if p]
        return PanelJudge(judges=[make_judge(p, catalogue=catalogue, max_reply_chars=max_reply_chars)
                                  for p in parts])
    if spec.startswith("llm:"):
        rest = spec[len("llm:"):]
        base_url, sep, model = rest.rpartition(":")
        if not sep or not base_url or not model:
            raise ValueError(f"judge spec {spec!r}: write llm:BASE_URL:MODEL, e.g. llm:http://localhost:8000/v1:qwen")
        return LLMJudge.from_url(base_url=base_url, model=model, catalogue=catalogue)
    raise ValueError(f"unknown judge {spec!r}; valid: programmatic, llm:BASE_URL:MODEL, panel:A|B|C")
