"""Implementations of the hook types in ``harness.hook_catalogue``.

Each implementation is a pure check ``(hook, check) -> HookResult``: did the
step pass, and if not, the details its message template may quote
(``{details}``, ``{tool}``, ``{value}``, ``{shelf}``, ``{error}``, ``{length}``,
``{limit}``). What a failure *does* (block with message, fallback, suppress)
is decided by the hook's ``on_fail`` in the Harness and applied by the agent.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from harness.hook_catalogue import HOOK_TYPES
from harness.hooks import HookSpec
from harness.livestream import Request, RoomState
from harness.regex import linear_schema_validator, user_search
from harness.tools import ToolSpec


@dataclass
class HookCheck:
    """What a hook can look at; which fields are set depends on the event."""

    event: str
    request: Request
    room: RoomState
    constraints: dict[str, float]
    link_ids: list[int]  # every link id of the catalogue
    tool_calls: list[Any] = field(default_factory=list)  # ToolCallRecord so far
    loaded_skills: list[str] = field(default_factory=list)
    reply_skills: list[str] = field(default_factory=list)
    messages: list[dict[str, Any]] = field(default_factory=list)
    parse_errors: list[str] = field(default_factory=list)
    tool: ToolSpec | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    tool_error: str | None = None
    reply: str = ""
    grounding_text: str = ""  # request context + tool results, for numbers_grounded


@dataclass
class HookResult:
    ok: bool
    details: dict[str, str] = field(default_factory=dict)
    # An input hook may pass a request after dropping some of its comments
    # (indices), e.g. one injected comment among real questions in multi mode.
    drop_comments: tuple[int, ...] = ()


PASS = HookResult(True)
HookFn = Callable[[HookSpec, HookCheck], HookResult]
HOOK_IMPLS: dict[str, HookFn] = {}


def hook_type(name: str) -> Callable[[HookFn], HookFn]:
    if name not in HOOK_TYPES:
        raise KeyError(f"{name} is not in harness.hook_catalogue.HOOK_TYPES")

    def register(fn: HookFn) -> HookFn:
        HOOK_IMPLS[name] = fn
        return fn

    return register


def fail(details: str, **extra: Any) -> HookResult:
    return HookResult(False, {"details": details, **{k: str(v) for k, v in extra.items()}})


# --- input ---------------------------------------------------------------------
@hook_type("input_validity")
def input_validity(hook: HookSpec, check: HookCheck) -> HookResult:
    p = hook.params
    comments = check.request.comments
    if len(comments) > p.get("max_comments", 100):
        return fail(f"{len(comments)} comments, at most {p['max_comments']} allowed")
    for i, comment in enumerate(comments):
        n = len(comment.text.strip())
        if n < p.get("min_chars", 1):
            return fail(f"comment {i + 1} is empty or too short ({n} characters)")
        if n > p.get("max_chars", 5000):
            return fail(f"comment {i + 1} has {n} characters, at most {p['max_chars']} allowed")
    return PASS


DEFAULT_INJECTION_PATTERNS = (
    r"(?i)\b(ignore|disregard|forget)\b.{0,30}\b(previous|prior|above|all|your)\b.{0,20}\b(instructions?|rules|prompts?)\b",
    r"(?i)\byou are now\b",
    r"(?i)\b(reveal|show|print|repeat|tell me)\b.{0,30}\b(system "
    r"prompt|your prompt|your instructions|hidden rules)\b",
    r"(?i)\b(developer|admin|god) mode\b",
    r"(?i)\bnew instructions?\s*:",
    r"(?i)\bact as (the|an?) (admin|owner|system)\b",
)


@hook_type("prompt_injection_guard")
def prompt_injection_guard(hook: HookSpec, check: HookCheck) -> HookResult:
    patterns = list(hook.params.get("patterns") or [])
    if hook.params.get("use_default_patterns", True):
        patterns += DEFAULT_INJECTION_PATTERNS
    comments = check.request.comments
    bad = [i for i, c in enumerate(comments) if any(user_search(p, c.text) for p in patterns)]
    if not bad:
        return PASS
    users = ", ".join(comments[i].user for i in bad)
    if len(bad) == len(comments):
        return fail(f"comment from {users} matches an injection pattern")
    # Other viewers asked real questions: answer them, leave the injection out.
    return HookResult(
        True,
        {"details": f"dropped the comment from {users} (injection pattern)"},
        drop_comments=tuple(bad),
    )


# --- before_model / after_model ------------------------------------------------
@hook_type("context_budget")
def context_budget(hook: HookSpec, check: HookCheck) -> HookResult:
    size = sum(len(str(m.get("content") or "")) for m in check.messages)
    limit = hook.params["max_prompt_chars"]
    if size > limit:
        return fail(
            f"the prompt has {size} characters, more than {limit}", length=size, limit=limit
        )
    return PASS


@hook_type("tool_call_format")
def tool_call_format(hook: HookSpec, check: HookCheck) -> HookResult:
    if check.parse_errors:
        return fail("; ".join(check.parse_errors))
    return PASS


# --- before_tool / after_tool --------------------------------------------------
@hook_type("tool_args_schema")
def tool_args_schema(hook: HookSpec, check: HookCheck) -> HookResult:
    assert check.tool is not None
    validator = linear_schema_validator(check.tool.parameters)  # the schema's regexes run on RE2
    errors = sorted(validator.iter_errors(check.arguments), key=lambda e: list(e.path))
    if errors:
        parts = [
            f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}" for e in errors[:3]
        ]
        return fail("; ".join(parts), tool=check.tool.name)
    return PASS


@hook_type("link_id_on_shelf")
def link_id_on_shelf(hook: HookSpec, check: HookCheck) -> HookResult:
    key = hook.params.get("argument", "link_id")
    if key not in check.arguments:
        return PASS
    value = check.arguments[key]
    shelf = check.room.shelf or check.link_ids
    if not isinstance(value, int) or isinstance(value, bool) or value not in shelf:
        return fail(
            f"link {value} is not on the shelf",
            value=value,
            shelf=shelf,
            tool=check.tool.name if check.tool else "",
        )
    return PASS


@hook_type("max_tool_calls")
def max_tool_calls(hook: HookSpec, check: HookCheck) -> HookResult:
    executed = [c for c in check.tool_calls if c.error_kind != "blocked"]
    limit = hook.params.get("max_calls")
    if limit is not None and len(executed) >= limit:
        return fail(f"{len(executed)} tool calls already made (limit {limit})", limit=limit)
    if hook.params.get("block_repeats", False) and check.tool is not None:
        for call in executed:
            if call.name == check.tool.name and call.arguments == check.arguments and call.ok:
                return fail(
                    f"{check.tool.name} was already called with the same arguments",
                    tool=check.tool.name,
                )
    return PASS


@hook_type("tool_error_guidance")
def tool_error_guidance(hook: HookSpec, check: HookCheck) -> HookResult:
    if check.tool_error:
        return fail(
            check.tool_error, tool=check.tool.name if check.tool else "", error=check.tool_error
        )
    return PASS


# --- stop ----------------------------------------------------------------------
@hook_type("require_reply_skill")
def require_reply_skill(hook: HookSpec, check: HookCheck) -> HookResult:
    wanted = hook.params.get("skills") or check.reply_skills
    if any(s in wanted for s in check.loaded_skills):
        return PASS
    return fail("no reply skill loaded; load one of " + ", ".join(wanted))


_NUMBER = r"\d+(?:[.,]\d+)?"
CLAIM_PATTERNS = {
    "price": [
        rf"[¥$￥]\s*{_NUMBER}",
        rf"{_NUMBER}\s*(yuan|rmb|元|dollars?|bucks|usd)\b",
        rf"\b(price[sd]?|costs?|only|just)\b[^.!?]{{0,40}}{_NUMBER}",
    ],
    "stock": [
        r"\b(sold out|out of stock)\b",
        rf"{_NUMBER}\s*(left|remaining|in stock|units|pieces)\b",
        r"\b(in stock|running low|stock)\b",
    ],
    "promotion": [
        r"\b(discount|coupon|promo(tion)?|deal|sale|save|saving)s?\b",
        rf"{_NUMBER}\s*%\s*off",
        r"\bbuy \w+ get\b",
        r"\b(spend|orders? over)\b[^.!?]{0,20}\d",
    ],
    "link": [r"\blink\s*#?\s*\d+", r"#\s*\d+\b", r"\bnumber\s+\d+\s+link\b"],
}


def makes_claim(reply: str, claim: str) -> bool:
    return any(re.search(p, reply, re.IGNORECASE) for p in CLAIM_PATTERNS[claim])


@hook_type("require_tool_before_claim")
def require_tool_before_claim(hook: HookSpec, check: HookCheck) -> HookResult:
    claim = hook.params["claim"]
    if not makes_claim(check.reply, claim):
        return PASS
    tools = set(hook.params["tools"])
    if any(c.name in tools and c.ok for c in check.tool_calls):
        return PASS
    return fail(
        f"the reply states a {claim} but none of {', '.join(sorted(tools))} succeeded "
        "in this request"
    )


@hook_type("max_length")
def max_length(hook: HookSpec, check: HookCheck) -> HookResult:
    limit = int(hook.params.get("max_chars") or check.constraints.get("max_reply_chars", 10**9))
    length = len(check.reply)
    if length > limit:
        return fail(f"{length} characters, limit {limit}", length=length, limit=limit)
    return PASS


@hook_type("banned_phrases")
def banned_phrases(hook: HookSpec, check: HookCheck) -> HookResult:
    flags = 0 if hook.params.get("case_sensitive") else re.IGNORECASE
    found = [
        p
        for p in hook.params["phrases"]
        if re.search(r"(?<!\w)" + re.escape(p) + r"(?!\w)", check.reply, flags)
    ]
    return fail(", ".join(repr(p) for p in found)) if found else PASS


_MARKDOWN = re.compile(
    r"(\*\*|__|`|^\s*#{1,6}\s|^\s*[-*+]\s|^\s*\d+[.)]\s|\[[^\]]+\]\([^)]+\))", re.MULTILINE
)
_URL = re.compile(r"(https?://|www\.)\S+", re.IGNORECASE)
_TOOL_SYNTAX = re.compile(r"</?tool_(call|response)>|\{\s*\"name\"\s*:|\"arguments\"\s*:")


@hook_type("response_format")
def response_format(hook: HookSpec, check: HookCheck) -> HookResult:
    p = hook.params
    reply = check.reply
    problems = []
    if p.get("no_markdown") and _MARKDOWN.search(reply):
        problems.append("Markdown formatting")
    if p.get("no_urls") and _URL.search(reply):
        problems.append("a URL")
    if p.get("single_paragraph") and "\n" in reply.strip():
        problems.append("more than one line")
    if p.get("no_tool_syntax") and _TOOL_SYNTAX.search(reply):
        problems.append("tool-call syntax")
    return fail("the reply contains " + ", ".join(problems)) if problems else PASS


def _numbers(text: str) -> list[str]:
    return re.findall(r"(?<![\w.])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?", text)


def _value(token: str) -> Decimal | None:
    try:
        return Decimal(token.replace(",", "")).normalize()
    except InvalidOperation:
        return None


@hook_type("numbers_grounded")
def numbers_grounded(hook: HookSpec, check: HookCheck) -> HookResult:
    known = {_value(t) for t in _numbers(check.grounding_text)}
    known |= {_value(str(v)) for v in hook.params.get("ignore", [])}
    ungrounded = []
    for token in _numbers(check.reply):
        value = _value(token)
        if value is not None and value not in known and token not in ungrounded:
            ungrounded.append(token)
    return fail(", ".join(ungrounded)) if ungrounded else PASS


@hook_type("language")
def language(hook: HookSpec, check: HookCheck) -> HookResult:
    letters = [c for c in check.reply if not c.isspace() and not c.isdigit()]
    if not letters:
        return PASS
    ratio = sum(c.isascii() for c in letters) / len(letters)
    minimum = hook.params.get("min_ascii_ratio", 0.9)
    if ratio < minimum:
        return fail(f"only {ratio:.0%} of the reply is English text (need {minimum:.0%})")
    return PASS


def missing_hook_types() -> list[str]:
    """Catalogue entries without an implementation (a test keeps this empty)."""
    return sorted(set(HOOK_TYPES) - set(HOOK_IMPLS))


_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


def render_message(template: str, values: dict[str, str]) -> str:
    """Fill ``{name}`` placeholders that have a value; other braces stay as written."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
