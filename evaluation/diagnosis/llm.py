"""The LLM diagnoser: a JSON prompt to the diagnoser role's model (any route).

The prompt shows the model the Harness (skills with their rule ids, hooks,
constraints), the catalogue of edit operations with their fields, and the
ranked failure clusters with representative cases; the model answers with
``{"proposals": [{"title", "rationale", "cluster", "edits": [...]}]}``. Every
edit is parsed with :func:`edit_from_dict`; a proposal whose JSON is malformed
is kept with its problem (``valid`` false) so the reviewer sees what the model
tried, and ``diagnose`` validates the rest against the Harness before they are
shown. The model is ``harness.policies.role_model("diagnoser", spec)``: the role's timeout, retries,
key and usage record are set there, and an OpenAI-compatible server is asked for JSON mode
(``response_format``); a local model is asked by the prompt alone.
"""

from __future__ import annotations

import json

from evaluation.diagnosis.clustering import Cluster
from evaluation.diagnosis.edits import EditError, edit_from_dict
from evaluation.diagnosis.proposals import Proposal
from harness.bundle import Bundle
from harness.policies import RoleModel, strip_reasoning

EDIT_CATALOGUE = """\
add_skill_rule {skill, rule_id, text, section?}: add "- text {#rule_id}" to skills/<skill>/SKILL.md
change_skill_rule {skill, rule_id, text}: replace rule {#rule_id}; empty text removes it
add_refusal_exclusion {rule_id, text}: tell the refusal skill what it must NOT refuse
add_hook {hook: {id, event, type, matcher?, params?, on_fail: {action, message}}}: append to hooks.yaml
tighten_hook {hook_id, params?, on_fail?, matcher?}: merge changes into an existing hook
require_tool_call {claim: price|stock|promotion, tools: [...], hook_id?, message?}: stop hook
set_constraint {name, value}: change a numeric constraint in prompt.yaml"""  # noqa: E501 (the model's prompt, as sent)

SYSTEM = (
    "You diagnose failures of a live-commerce AI avatar and propose edits to its Harness "
    "(skills, hooks, prompt constraints). The model is fixed: only the Harness may change. "
    "Propose the smallest edits that fix a whole cluster without hurting other categories. "
    'Answer with one JSON object only: {"proposals": [{"title": str, "rationale": str, '
    '"cluster": int, "edits": [{"op": ..., ...}]}]}.\n\nEdit operations:\n' + EDIT_CATALOGUE
)


def harness_outline(bundle: Bundle, *, max_rule_chars: int = 140) -> str:
    """A compact view of the Harness: skills and rule ids, hooks, constraints."""
    lines = ["Skills:"]
    for skill in bundle.skills.values():
        lines.append(f"- {skill.name} ({skill.kind}): {skill.description[:160]}")
        lines += [f"    {{#{r.id}}} {r.text[:max_rule_chars]}" for r in skill.rules]
    lines.append("Hooks:")
    for hook in bundle.hooks:
        lines.append(f"- {hook.id}: {hook.type} at {hook.event} params={json.dumps(hook.params)}")
    lines.append(f"Constraints: {json.dumps(bundle.constraints)}")
    lines.append(f"Tools: {', '.join(bundle.tool_registry.names)}")
    return "\n".join(lines)


def clusters_text(clusters: list[Cluster]) -> str:
    parts = []
    for i, cluster in enumerate(clusters):
        parts.append(
            f"Cluster {i}: reason {cluster.reason}, {len(cluster.cases)} case(s), "
            f"categories {dict(cluster.categories)}, terms {cluster.top_terms[:5]}"
        )
        for case in cluster.representatives:
            parts.append(
                f"  case {case.case_id}: comment {case.comment[:160]!r} -> reply "
                f"{case.reply[:160]!r}; tools {list(case.tools_called)}; skills "
                f"{list(case.skills_loaded)}; reasons {list(case.reasons)}"
            )
    return "\n".join(parts)


def parse_proposals(text: str, *, clusters: list[Cluster], diagnoser: str) -> list[Proposal]:
    """Proposals from the model's JSON; malformed ones are kept, marked invalid with the reason."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise EditError(
            f"the diagnoser's answer is not JSON ({exc.msg} at line {exc.lineno} "
            f"column {exc.colno})"
        ) from None
    items = data.get("proposals") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise EditError("the diagnoser's answer must be an object with a 'proposals' list")
    proposals = []
    for i, item in enumerate(items):
        where = f"proposals[{i}]"
        if not isinstance(item, dict):
            continue
        index = item.get("cluster")
        cluster = clusters[index] if isinstance(index, int) and 0 <= index < len(clusters) else None
        edits, problems = [], []
        for j, raw in enumerate(item.get("edits") or []):
            try:
                edits.append(edit_from_dict(raw, where=f"{where}.edits[{j}]"))
            except EditError as exc:
                problems.append(str(exc))
        if not edits and not problems:
            problems.append(f"{where}.edits: no edits proposed")
        proposals.append(
            Proposal(
                title=str(item.get("title") or f"Proposal {i + 1}")[:200],
                rationale=str(item.get("rationale") or ""),
                reason=cluster.reason if cluster else "",
                target_case_ids=cluster.case_ids if cluster else [],
                edits=edits if not problems else [],
                diagnoser=diagnoser,
                cluster_index=index if cluster else -1,
                problems=problems,
            )
        )
    return proposals


class LLMDiagnoser:
    """Asks the diagnoser role's model (``harness.policies.RoleModel``) for proposals in JSON."""

    def __init__(self, *, model: RoleModel) -> None:
        self.model = model
        self.name = f"llm:{model.label}"

    def _chat(self, messages: list[dict[str, str]]) -> str:
        return strip_reasoning(self.model.chat(messages).text)[0]

    def messages(self, *, clusters: list[Cluster], bundle: Bundle) -> list[dict[str, str]]:
        return [
            {"role": "system", "content": SYSTEM},
            {
                "role": "user",
                "content": f"Harness {bundle.name}:\n{harness_outline(bundle)}\n\n"
                f"Failure clusters, most costly first:\n{clusters_text(clusters)}",
            },
        ]

    def propose(self, *, clusters: list[Cluster], bundle: Bundle) -> list[Proposal]:
        if not clusters:
            return []
        text = self._chat(self.messages(clusters=clusters, bundle=bundle))
        return parse_proposals(text, clusters=clusters, diagnoser=self.name)
