"""How much of a Harness's system prompt every request shares, and what request-dependent text costs
where it comes before static text.

A local model's engine keeps the keys and values of prompts it has seen (llama.cpp's slot cache, the
torch engine's prefix store), so a new request prefills only what differs from an earlier one, from
the first differing token on. Blocks are static when their template and ``when`` slot use no
request-context slot (``skill_list`` and ``tool_list`` come from the Harness itself); a static block
after a request-dependent one is prefilled again for every request. ``prompt_sharing(bundle)``
renders the prompt for two different requests, takes their common prefix, and counts tokens with
the default model's tokenizer when the model cache holds it (an estimate of 4 characters a token
otherwise, marked ``~``). It is a warning, never an error: the block order is the operator's.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from harness.prompt import CONTEXT_SLOTS

#: Slots that come from the Harness, not the request: the same text for every request.
HARNESS_SLOTS = ("skill_list", "tool_list")
REQUEST_SLOTS = tuple(s for s in CONTEXT_SLOTS if s not in HARNESS_SLOTS)
#: Prefill rate of the CPU route (llama.cpp, SmolLM2-135M Q4_1, 2 cores;
#: benchmarks/local_engine.py).
PREFILL_TOK_S = 367.0
CHARS_PER_TOKEN = 4  # the estimate used when no tokenizer is at hand

# What the request slots hold for the two renderings (the second differs from the first at once).
_FILLER = {"A": "Alpha request text " * 12, "B": "Bravo request text " * 12}


@dataclass(frozen=True)
class PromptSharing:
    shared_tokens: int
    total_tokens: (
        int  # of the whole prompt for a typical request (the fillers stand in for request text)
    )
    request_blocks: list[str]  # ids of the blocks that depend on the request
    static_after: list[str]  # static blocks that come after a request-dependent one
    static_after_tokens: int  # what those cost every request in prefill
    exact: bool  # counted with the model's tokenizer (False: estimated from characters)

    @property
    def seconds_per_request(self) -> float:
        return self.static_after_tokens / PREFILL_TOK_S

    def summary(self) -> str:
        approx = "" if self.exact else "~"
        line = (
            f"prompt: shared by every request: {approx}{self.shared_tokens:,} "
            f"of {approx}{self.total_tokens:,} "
            f"tokens (request-dependent blocks: {', '.join(self.request_blocks) or 'none'})"
        )
        if self.static_after:
            line += (
                f"; warning: static block(s) {', '.join(self.static_after)} "
                "come after request-dependent "
                "text, so every request prefills their "
                f"{approx}{self.static_after_tokens:,} tokens again "
                f"(~{self.seconds_per_request:.1f} s at "
                f"{PREFILL_TOK_S:.0f} tok/s on the CPU route); "
                "put static blocks first"
            )
        return line

    def to_dict(self) -> dict[str, Any]:
        return {
            "shared_tokens": self.shared_tokens,
            "total_tokens": self.total_tokens,
            "request_blocks": self.request_blocks,
            "static_after": self.static_after,
            "static_after_tokens": self.static_after_tokens,
            "exact": self.exact,
            "seconds_per_request": round(self.seconds_per_request, 2),
        }


def _depends_on_request(block) -> bool:
    return bool(set(block.slots()) & set(REQUEST_SLOTS)) or (block.when in REQUEST_SLOTS)


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    """The default model's tokenizer when the model cache already holds it (never built here)."""
    try:
        from tokenizers import Tokenizer

        from harness.model_cache import DEFAULT_MODEL_NAME, model_cache_dir

        path = model_cache_dir() / DEFAULT_MODEL_NAME / "tokenizer.json"
        return Tokenizer.from_file(str(path)) if path.is_file() else None
    except Exception:  # noqa: BLE001 - no tokenizer: estimate from characters
        return None


def _count(text: str) -> tuple[int, bool]:
    tokenizer = _tokenizer()
    if tokenizer is None:
        return -(-len(text) // CHARS_PER_TOKEN), False
    return len(tokenizer.encode(text, add_special_tokens=False).ids), True


def shared_prefix(bundle) -> str:
    """The text every request's system message under ``bundle`` starts with: the common prefix of
    the system prompt rendered for two different requests and for an empty one (a block shown
    only ``when`` a request slot is filled ends it too). A local policy keeps this prefix's
    prefilled state (``Policy.prepare``)."""
    from harness.runtime.context import harness_slots, system_prompt

    harness_values = harness_slots(bundle)
    renders = [
        system_prompt(bundle, {slot: filler for slot in REQUEST_SLOTS} | harness_values)
        for filler in (_FILLER["A"], _FILLER["B"], "")
    ]
    common = 0
    for chars in zip(*renders, strict=False):
        if len(set(chars)) > 1:
            break
        common += 1
    return renders[0][:common]


def prompt_sharing(bundle) -> PromptSharing:
    """The shared prefix of ``bundle``'s system prompt across requests, and what its block order
    costs."""
    from harness.runtime.context import harness_slots

    pipeline = bundle.prompt
    harness_values = harness_slots(bundle)

    def render(which: str) -> str:
        context = {slot: _FILLER[which] for slot in REQUEST_SLOTS}
        context.update(harness_values)
        return "\n\n".join(
            f"## {block.title}\n{text.strip()}" for block, text in pipeline.render(context)
        )

    first, second = render("A"), render("B")
    common = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        common += 1
    shared, exact = _count(first[:common])
    total, _ = _count(first)
    request_blocks = [b.id for b in pipeline.blocks if _depends_on_request(b)]
    static_after: list[str] = []
    static_text: list[str] = []
    seen_request = False
    context = {slot: _FILLER["A"] for slot in REQUEST_SLOTS} | harness_values
    for block, text in pipeline.render(context):
        if _depends_on_request(block):
            seen_request = True
        elif seen_request:
            static_after.append(block.id)
            static_text.append(f"## {block.title}\n{text.strip()}")
    static_after_tokens = _count("\n\n".join(static_text))[0] if static_text else 0
    return PromptSharing(
        shared_tokens=shared,
        total_tokens=total,
        request_blocks=request_blocks,
        static_after=static_after,
        static_after_tokens=static_after_tokens,
        exact=exact,
    )
