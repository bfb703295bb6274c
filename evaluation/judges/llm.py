"""An LLM judge over any model route, with a rubric prompt and evidence tools.

The judge model sees the case (comments, room, gold facts, forbidden claims,
reference reply) and the reply, may call evidence tools that read the
catalogue (``get_product``, ``get_promotions``, ``search_faq``) to check facts,
and must answer with one JSON object:
``{"accuracy": 0|1, "effectiveness": 0|0.5|1, "reasons": [codes], "explanation": "..."}``.
Reason codes outside the documented list are kept but prefixed ``llm:``.

``model`` is the judge role's model (``harness.policies.role_model("judge", spec)``): an
OpenAI-compatible server (SGLang, vLLM, ``transformers serve``, a vendor) or a local checkpoint in
process, with the judge's timeout, retries and usage record (``harness.policies.roles``). Evidence
tool calls come back native from a server, or in the text protocol from a local model
(``harness.policies.text_protocol``); the judge answers both.
"""

from __future__ import annotations

import json
import re
from typing import Any

from evaluation.judges.base import ACCURACY_REASONS, EFFECTIVENESS_REASONS, Reason, Verdict
from harness.livestream.catalogue import Catalogue
from harness.policies import RoleModel, parse_reply

RUBRIC = f"""You are a strict evaluator of replies given by an AI live-stream host.
Score the REPLY to the viewer COMMENTS.
Accuracy (0 or 1): 0 if the reply states any fact that the evidence does not support (a wrong
price, an invented discount, coupon or gift, a wrong stock claim, a link that does not exist),
makes a forbidden claim, a false promise or overreaches its capabilities; or replies publicly
when the case says it must stay silent. Otherwise 1. Use the tools to check product facts.
Effectiveness (0, 0.5 or 1): 1 if the reply addresses the viewer's intent usefully and states
the required facts; 0.5 if it is on topic but misses a required fact or is too long to speak;
0 if it is vague, refuses a legitimate question, is in the wrong language or gives no answer.
Reason codes: accuracy {", ".join(ACCURACY_REASONS)}; effectiveness {", ".join(EFFECTIVENESS_REASONS)}.
Answer with ONE JSON object and nothing else:
{{"accuracy": 0 or 1, "effectiveness": 0 or 0.5 or 1, "reasons": [codes], "explanation": "one sentence"}}"""  # noqa: E501 (the model's prompt, as sent)

EVIDENCE_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_product",
            "description": "Catalogue record of a product by link number.",
            "parameters": {
                "type": "object",
                "properties": {"link_id": {"type": "integer"}},
                "required": ["link_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "get_promotions",
            "description": "Promotions that apply to a product (or room-wide when link_id is 0).",
            "parameters": {
                "type": "object",
                "properties": {"link_id": {"type": "integer"}},
                "required": ["link_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_faq",
            "description": "The shop's FAQ entries matching a question.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    },
]


def evidence_call(catalogue: Catalogue, name: str, arguments: dict[str, Any]) -> Any:
    """Run one evidence tool against the catalogue; errors come back as data, never raise."""
    try:
        if name == "get_product":
            product = catalogue.product(int(arguments["link_id"]))
            return (
                product.to_dict()
                if product
                else {"error": f"no product at link {arguments['link_id']}"}
            )
        if name == "get_promotions":
            link = int(arguments.get("link_id") or 0)
            promos = catalogue.promotions_for(link) if link else catalogue.promotions
            return [{**p.to_dict(), "describe": p.describe()} for p in promos]
        if name == "search_faq":
            return [f.to_dict() for f in catalogue.search_faq(str(arguments.get("query", "")))]
    except (KeyError, TypeError, ValueError) as exc:
        return {"error": f"bad arguments for {name}: {exc}"}
    return {"error": f"unknown evidence tool {name}"}


def parse_verdict_json(text: str, *, judge: str) -> Verdict:
    """Read the judge model's JSON answer (the last {...} in its text); raise ValueError if
    unusable."""
    matches = re.findall(r"\{.*\}", text, flags=re.S)
    if not matches:
        raise ValueError(f"judge answer holds no JSON object: {text[:200]!r}")
    data = json.loads(matches[-1])
    acc = int(data["accuracy"])
    eff = float(data["effectiveness"])
    if acc not in (0, 1) or eff not in (0.0, 0.5, 1.0):
        raise ValueError(f"judge scores out of range: accuracy={acc}, effectiveness={eff}")
    known = set(ACCURACY_REASONS) | set(EFFECTIVENESS_REASONS)
    reasons = []
    for code in data.get("reasons", []) or []:
        code = str(code)
        dim = "accuracy" if code in ACCURACY_REASONS else "effectiveness"
        reasons.append(
            Reason(code if code in known else f"llm:{code}", dim, str(data.get("explanation", "")))
        )
    return Verdict(
        accuracy=acc,
        effectiveness=eff,
        dimensions={"accuracy": float(acc), "effectiveness": eff},
        reasons=reasons,
        judge=judge,
    )


class LLMJudge:
    """Judge with one model (the judge role's, ``harness.policies.RoleModel``)."""

    def __init__(
        self,
        *,
        model: RoleModel,
        catalogue: Catalogue,
        max_tool_rounds: int = 3,
        name: str | None = None,
    ) -> None:
        self.model = model
        self.catalogue = catalogue
        self.max_tool_rounds = max_tool_rounds
        self.name = name or f"llm:{model.label}"

    def _case_text(self, case: dict, reply: str, route: str) -> str:
        gold = case.get("gold") or {}
        view = {
            "comments": [
                c if isinstance(c, str) else c.get("text") for c in case.get("comments", [])
            ],
            "history": case.get("history", []),
            "room": case.get("room", {}),
            "products_in_play": case.get("products", []),
            "must_stay_silent": gold.get("route") == "silent",
            "required_facts": [f["text"] for f in gold.get("required_facts", [])],
            "forbidden_claims": [f["text"] for f in gold.get("forbidden_claims", [])],
            "reference_reply": gold.get("reference_reply", ""),
            "locale": case.get("locale", "en"),
        }
        return (
            f"CASE:\n{json.dumps(view, ensure_ascii=False, indent=1)}\n\nREPLY "
            f"(route {route}):\n{reply}"
        )

    def judge(
        self, *, case: dict, reply: str, route: str = "public", trajectory: dict | None = None
    ) -> Verdict:
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": RUBRIC},
            {"role": "user", "content": self._case_text(case, reply, route)},
        ]
        for _ in range(self.max_tool_rounds + 1):
            output = self.model.chat(messages, tools=EVIDENCE_TOOLS)
            parsed = parse_reply(output.text)
            native = bool(output.tool_calls)
            calls = output.tool_calls if native else parsed.tool_calls
            if not calls:
                return parse_verdict_json(parsed.text, judge=self.name)
            assistant: dict[str, Any] = {"role": "assistant", "content": output.text}
            ids = [call.id or f"call_{len(messages)}_{i}" for i, call in enumerate(calls)]
            if native:
                assistant["tool_calls"] = [
                    c.to_openai(cid) for cid, c in zip(ids, calls, strict=True)
                ]
            messages.append(assistant)
            for cid, call in zip(ids, calls, strict=True):
                result = json.dumps(
                    evidence_call(self.catalogue, call.name, call.arguments), ensure_ascii=False
                )
                # a local model reads tool results as the agent's do (harness.runtime.agent): a user
                # turn
                messages.append(
                    {"role": "tool", "tool_call_id": cid, "content": result}
                    if native
                    else {"role": "user", "content": result}
                )
        raise ValueError(
            f"{self.name} kept calling tools after {self.max_tool_rounds} rounds without a verdict"
        )
