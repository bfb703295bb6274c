"""The evaluation case format (JSONL, ``"format": "hs-case/1"``) and its all-or-nothing import.

One line = one case: the request fields of :class:`harness.livestream.Request`
(mode, comments, history, anchor utterances, room, products, FAQ, locale) plus
the case's id, set, intent category and gold labels, optional labelled
candidate replies (judge calibration), optional extra tools (Tool Robustness),
optional active instructions (Prompt Robustness). docs/case-format.md shows
an example of every field.

``load_cases`` validates every line before returning anything and raises
:class:`CaseFileError` listing each bad line as ``file:line: field: message``,
so an import either takes the whole file or nothing.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.livestream.request import Request
from harness.livestream.validation import DocumentValidationError, FieldReader
from harness.userfiles import MAX_LINES_BYTES, InputFileError, parse_json, read_text

CASE_FORMAT = "hs-case/1"
CATEGORIES = (
    "product_qa",
    "chitchat",
    "clarification",
    "aftersale",
    "promotion",
    "presentation_order",
    "faq",
    "silent_refusal",
    "greeting",
)
ROUTES = ("public", "private", "silent")
# One vocabulary: the category each request intent belongs to. The generator's cases carry the
# categories themselves; requests written by hand and production traffic carry the intents of
# examples/requests/ (and the reply skill names some deployments send). ``category_of_intent`` is
# what the traffic list and the labelling form read.
INTENT_CATEGORIES: dict[str, str] = {
    **{category: category for category in CATEGORIES},
    "after_sales": "aftersale",
    "casual_chat": "chitchat",
    "chillchat": "chitchat",
    "small_talk": "chitchat",
    "faq_reply": "faq",
    "discount_promotion": "promotion",
    "general_discount": "promotion",
    "change_order": "presentation_order",
    "greet": "greeting",
    "item_qa": "product_qa",
}


def category_of_intent(intent: object) -> str:
    """The case category of a request intent (a category is its own intent); "" when unknown."""
    if not isinstance(intent, str):
        return ""
    return INTENT_CATEGORIES.get(intent.strip().lower().replace("-", "_"), "")


RUBRICS = ("ACQ", "RC", "TC", "FI", "TCO")
FACT_KINDS = ("price", "stock", "spec", "promotion", "faq", "link", "question", "order", "text")
CONSTRAINT_KINDS = (
    "max_chars",
    "end_with",
    "start_with",
    "must_mention",
    "forbid_word",
    "numbered_list",
    "mention_link_id",
    "no_exclamation",
    "tool_order",
)
REQUEST_FIELDS = (
    "id",
    "mode",
    "comments",
    "room",
    "history",
    "anchor_utterances",
    "products",
    "faq",
    "locale",
)
TOP_FIELDS = set(REQUEST_FIELDS) | {
    "format",
    "set",
    "category",
    "gold",
    "candidates",
    "extra_tools",
    "constraints",
    "replay",
    "tags",
    "catalogue",
    "harness_variant",
}
GOLD_FIELDS = {
    "route",
    "reply_skills",
    "strategy_skills",
    "tool_calls",
    "tool_order",
    "required_facts",
    "forbidden_claims",
    "reference_reply",
    "rubrics",
}


@dataclass(frozen=True)
class CaseProblem:
    """One problem of one line of a case file."""

    line: int
    field: str
    message: str
    file: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field or '<line>'}: {self.message}"


class CaseFileError(ValueError):
    """A case file has bad lines; ``problems`` lists every one, nothing was imported."""

    def __init__(self, problems: list[CaseProblem], *, source: str) -> None:
        self.problems = problems
        self.source = source
        shown = "\n".join(f"  {p}" for p in problems[:50])
        more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
        super().__init__(
            f"{len(problems)} problem(s) in {source}; nothing was imported:\n{shown}{more}"
        )


def _str_list(reader: FieldReader, data: dict, key: str, path: str) -> list[str]:
    values = reader.listing(data, key, path)
    for i, value in enumerate(values):
        if not isinstance(value, str) or not value:
            reader.problem(f"{reader.join(path, key)}[{i}]", "must be a non-empty string")
    return values


def _check_gold(reader: FieldReader, gold: Any) -> None:
    data = reader.mapping(gold, "gold")
    if data is None:
        return
    reader.unknown_keys(data, "gold", GOLD_FIELDS)
    reader.choice(data, "route", "gold", ROUTES)
    _str_list(reader, data, "reply_skills", "gold")
    _str_list(reader, data, "strategy_skills", "gold")
    for i, call in enumerate(reader.listing(data, "tool_calls", "gold")):
        path = f"gold.tool_calls[{i}]"
        call = reader.mapping(call, path)
        if call is None:
            continue
        reader.unknown_keys(call, path, {"name", "arguments", "optional"})
        reader.string(call, "name", path)
        if not isinstance(call.get("arguments", {}), dict):
            reader.problem(
                f"{path}.arguments", "must be an object of argument name -> expected value"
            )
        if not isinstance(call.get("optional", False), bool):
            reader.problem(f"{path}.optional", "must be true or false")
    _str_list(reader, data, "tool_order", "gold")
    for i, fact in enumerate(reader.listing(data, "required_facts", "gold")):
        path = f"gold.required_facts[{i}]"
        fact = reader.mapping(fact, path)
        if fact is None:
            continue
        reader.unknown_keys(fact, path, {"id", "kind", "text", "any_of", "value", "link_id"})
        reader.string(fact, "id", path)
        reader.choice(fact, "kind", path, FACT_KINDS)
        reader.string(fact, "text", path)
        if not _str_list(reader, fact, "any_of", path):
            reader.problem(f"{path}.any_of", "must list at least one accepted wording")
    for i, claim in enumerate(reader.listing(data, "forbidden_claims", "gold")):
        path = f"gold.forbidden_claims[{i}]"
        claim = reader.mapping(claim, path)
        if claim is None:
            continue
        reader.unknown_keys(claim, path, {"id", "text", "patterns"})
        reader.string(claim, "id", path)
        reader.string(claim, "text", path)
        for j, pattern in enumerate(_str_list(reader, claim, "patterns", path)):
            try:
                re.compile(pattern)
            except (re.error, TypeError) as exc:
                reader.problem(f"{path}.patterns[{j}]", f"not a valid regular expression ({exc})")
    reader.string(data, "reference_reply", "gold", required=False, allow_empty=True)
    for i, rubric in enumerate(reader.listing(data, "rubrics", "gold")):
        if rubric not in RUBRICS:
            reader.problem(
                f"gold.rubrics[{i}]", f"must be one of {', '.join(RUBRICS)}, got {rubric!r}"
            )


def _check_candidates(reader: FieldReader, candidates: list) -> None:
    for i, cand in enumerate(candidates):
        path = f"candidates[{i}]"
        cand = reader.mapping(cand, path)
        if cand is None:
            continue
        reader.unknown_keys(cand, path, {"id", "reply", "route", "defect", "human", "trajectory"})
        if "trajectory" in cand:
            reader.mapping(cand["trajectory"], f"{path}.trajectory")
        reader.string(cand, "id", path)
        reader.string(cand, "reply", path, allow_empty=True)
        reader.choice(cand, "route", path, ROUTES, required=False)
        reader.string(cand, "defect", path, required=False)
        if "human" in cand:
            human = reader.mapping(cand["human"], f"{path}.human")
            if human is not None:
                reader.unknown_keys(human, f"{path}.human", {"accuracy", "effectiveness", "reason"})
                acc = human.get("accuracy")
                eff = human.get("effectiveness")
                if acc not in (0, 1) or isinstance(acc, bool):
                    reader.problem(f"{path}.human.accuracy", f"must be 0 or 1, got {acc!r}")
                if eff not in (0, 0.5, 1) or isinstance(eff, bool):
                    reader.problem(
                        f"{path}.human.effectiveness", f"must be 0, 0.5 or 1, got {eff!r}"
                    )
                reader.string(human, "reason", f"{path}.human", required=False)


def _check_extra_tools(reader: FieldReader, tools: list) -> None:
    for i, tool in enumerate(tools):
        path = f"extra_tools[{i}]"
        tool = reader.mapping(tool, path)
        if tool is None:
            continue
        reader.unknown_keys(
            tool, path, {"name", "description", "parameters", "result", "distractor"}
        )
        reader.string(tool, "name", path)
        reader.string(tool, "description", path)
        if not isinstance(tool.get("parameters", {}), dict):
            reader.problem(f"{path}.parameters", "must be a JSON-Schema object")
        if not isinstance(tool.get("distractor", False), bool):
            reader.problem(f"{path}.distractor", "must be true or false")


def _check_constraints(reader: FieldReader, constraints: list) -> None:
    for i, item in enumerate(constraints):
        path = f"constraints[{i}]"
        item = reader.mapping(item, path)
        if item is None:
            continue
        reader.unknown_keys(item, path, {"id", "kind", "text", "value"})
        reader.string(item, "id", path)
        reader.choice(item, "kind", path, CONSTRAINT_KINDS)
        reader.string(item, "text", path)


def _check_harness_variant(reader: FieldReader, case: dict) -> None:
    """``harness_variant``: the case runs under an HSA variant of the evaluated Harness (seed,
    families)."""
    if "harness_variant" not in case:
        return
    from harness.augment import DIMS

    spec = reader.mapping(case["harness_variant"], "harness_variant")
    if spec is None:
        return
    reader.unknown_keys(spec, "harness_variant", {"seed", "dims"})
    reader.integer(spec, "seed", "harness_variant", minimum=0)
    dims = reader.listing(spec, "dims", "harness_variant", required=True)
    for i, dim in enumerate(dims):
        if dim not in DIMS:
            reader.problem(
                f"harness_variant.dims[{i}]", f"must be one of {', '.join(DIMS)}, got {dim!r}"
            )
    if isinstance(spec.get("dims"), list) and not dims:
        reader.problem("harness_variant.dims", f"must name at least one of {', '.join(DIMS)}")


def validate_case(data: Any) -> list[tuple[str, str]]:
    """Every problem of one decoded case as (field path, message); empty when valid."""
    reader = FieldReader()
    case = reader.mapping(data, "")
    if case is None:
        return [(p.path, p.message) for p in reader.problems]
    reader.unknown_keys(case, "", TOP_FIELDS)
    if case.get("format") != CASE_FORMAT:
        reader.problem("format", f"must be {CASE_FORMAT!r}, got {case.get('format')!r}")
    reader.string(case, "id", "")
    reader.string(case, "set", "", required=False)
    reader.choice(case, "category", "", CATEGORIES)
    if "gold" in case:
        _check_gold(reader, case["gold"])
    else:
        reader.problem("gold", "is required (an object with at least route)")
    _check_candidates(reader, reader.listing(case, "candidates", ""))
    _check_extra_tools(reader, reader.listing(case, "extra_tools", ""))
    _check_constraints(reader, reader.listing(case, "constraints", ""))
    _str_list(reader, case, "tags", "")
    _check_harness_variant(reader, case)
    problems = [(p.path, p.message) for p in reader.problems]
    try:
        Request.from_dict({k: case[k] for k in REQUEST_FIELDS if k in case})
    except DocumentValidationError as exc:
        problems += [(p.path, p.message) for p in exc.problems]
    return problems


def case_request_data(case: dict) -> dict:
    """The request part of a case as JSON data, not yet validated (its category as the intent
    label)."""
    data = {k: case[k] for k in REQUEST_FIELDS if k in case}
    if isinstance(case.get("category"), str):
        data["intent"] = case["category"]
    return data


def case_request(case: dict) -> Request:
    """The runtime request of a case (its category travels as the request's intent label)."""
    return Request.from_dict(case_request_data(case), source=f"case {case.get('id')}")


def parse_cases(lines: Iterable[str], *, source: str = "<cases>") -> list[dict]:
    """Validate all lines; return the cases, or raise CaseFileError naming every bad line."""
    cases: list[dict] = []
    problems: list[CaseProblem] = []
    first_line: dict[str, int] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = parse_json(line.removesuffix("\n"), source=source, line=lineno, what="case")
        except InputFileError as exc:
            problems.append(CaseProblem(lineno, "", exc.reason, source))
            continue
        found = validate_case(data)
        problems += [CaseProblem(lineno, f, m, source) for f, m in found]
        if isinstance(data, dict) and isinstance(data.get("id"), str):
            if data["id"] in first_line:
                problems.append(
                    CaseProblem(
                        lineno,
                        "id",
                        f"duplicate id {data['id']!r} (first on line {first_line[data['id']]})",
                        source,
                    )
                )
            else:
                first_line[data["id"]] = lineno
        if not found:
            cases.append(data)
    if problems:
        raise CaseFileError(problems, source=source)
    if not cases:
        raise CaseFileError([CaseProblem(0, "", "the file holds no cases", source)], source=source)
    return cases


def load_cases(path: str | Path) -> list[dict]:
    """Read and validate a JSONL case file (all or nothing).

    ``InputFileError`` when the file is missing, too large or not UTF-8; ``CaseFileError``
    listing every bad line otherwise.
    """
    text = read_text(path, what="case file", max_bytes=MAX_LINES_BYTES)
    return parse_cases(io.StringIO(text, newline=None), source=str(path))


def dumps_case(case: dict) -> str:
    """One canonical JSON line (sorted keys, no spaces): the same case gives the same bytes."""
    return json.dumps(case, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def write_cases(path: str | Path, cases: Iterable[dict]) -> int:
    """Write cases as JSONL atomically (temp file, then rename); returns how many."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    count = 0
    with tmp.open("w", encoding="utf-8", newline="\n") as handle:
        for case in cases:
            handle.write(dumps_case(case) + "\n")
            count += 1
    tmp.replace(path)
    return count


def import_cases(*, source: str | Path, dest: str | Path) -> int:
    """Validate ``source`` fully, then copy its cases to ``dest``; on any problem write nothing."""
    cases = load_cases(source)
    return write_cases(dest, cases)
