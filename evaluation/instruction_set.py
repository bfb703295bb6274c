"""The project's own instruction-following set: verifiable instructions built by lm-eval's IFEval
checkers.

The official IFEval prompts (541, docs/architecture.md §6 T4) are not part of a clone, and nothing
may be downloaded at run time, so the default instruction-following set is generated here, seeded
and offline. Each prompt is one of this project's own writing tasks (:data:`TASKS`, written for it,
none taken from IFEval) followed by one to three instructions. The instructions are not ours: each
is an instruction class of lm-eval's IFEval registry (``INSTRUCTION_DICT``), whose
``build_description()`` writes the instruction's text and picks its arguments, and whose
``get_instruction_args()`` gives the ``kwargs`` stored with the prompt. Combinations the registry
lists as conflicting (``INSTRUCTION_CONFLICTS``) are never drawn together. The rows are in the
official format (``key``, ``prompt``, ``instruction_id_list``, ``kwargs``), so the same checkers
(``evaluation.ifeval.score_responses``) score them exactly as they score the official file.

Prompt ``i`` depends only on ``(seed, i)``: the first N prompts of a bigger set are the N-prompt
set, so "the first 50" means the same prompts everywhere. Scores on this set are labelled as
such on every page (:data:`LABEL`): they are comparable between models scored on the same
prompts (same seed and count, same lm-eval version), not with published IFEval numbers.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from contextlib import contextmanager

from evaluation.nltk_data import ensure_nltk_data

DEFAULT_SEED = 0
DEFAULT_SIZE = 541  # as many prompts as the official set, when no limit is given
LABEL = "generated instruction-following set (IFEval checkers)"
MAX_INSTRUCTIONS = 3

# Writing tasks of this project (live-commerce and everyday subjects); the instructions follow them.
TASKS = (
    "Write a welcome message for viewers who just joined a cooking-pan livestream.",
    "Describe a lightweight travel backpack to someone watching a shopping stream.",
    "Explain to a first-time buyer how the return window of an online shop works.",
    "Write a product description for a ceramic teapot sold during a live sale.",
    "Tell a viewer why a bamboo cutting board needs oiling once a month.",
    "Write a short script for announcing a flash sale on wireless earbuds.",
    "Answer a viewer who asks whether a winter coat runs small or large.",
    "Write a note thanking the audience after a two-hour evening stream.",
    "Describe three ways to style a plain white shirt for an office day.",
    "Explain to a shopper why a rice cooker with a ceramic bowl costs more.",
    "Write an announcement that the next stream moves from Friday to Sunday.",
    "Describe the smell of a lavender hand cream to viewers who cannot try it.",
    "Give advice to a viewer choosing between two sizes of a yoga mat.",
    "Write a reply to a viewer who says the parcel arrived with a dented box.",
    "Explain how a stream host should handle a question they cannot answer.",
    "Write a short story about a street vendor who sells umbrellas only when it rains.",
    "Describe a quiet morning in a small mountain village.",
    "Explain to a child why leaves change colour in autumn.",
    "Write a letter to a neighbour asking them to water your plants for a week.",
    "Give tips for keeping a home office tidy.",
    "Explain the difference between a sale price and a coupon discount.",
    "Write a short speech for the opening of a community vegetable garden.",
    "Describe how to pack fragile glassware for shipping.",
    "Write a review of an imaginary cafe that serves only soup.",
    "Explain why a stream host should repeat a product's price clearly.",
    "Write a birthday message for a colleague who loves hiking.",
    "Describe what makes a good night's sleep, for a busy student.",
    "Write a product pitch for a reusable water bottle with a built-in filter.",
    "Explain how to compare two phone chargers before buying one.",
    "Write a message to viewers apologising that a popular item sold out.",
    "Describe a perfect picnic for a family of four.",
    "Explain to a new seller how to write a clear product title.",
    "Write a poem about a delivery driver on a rainy evening.",
    "Give a shopper advice on caring for a wool sweater.",
    "Explain what a warranty covers and what it usually does not.",
    "Write a short dialogue between a shopper and a host about a lamp's brightness.",
    "Describe the best way to learn to cook three simple dinners.",
    "Write an invitation to a livestream that shows new spring sneakers.",
    "Explain why reading product reviews before buying can save money.",
    "Write a note for viewers on how to find the link to a product during a stream.",
    "Describe a lost-and-found office at a busy train station.",
    "Explain how to choose a gift for someone who has everything.",
    "Write a pitch for a set of stackable food containers.",
    "Tell a viewer what to do if a coupon code does not work at checkout.",
    "Describe the sounds of a night market just before it closes.",
    "Write a blog introduction about saving money on household cleaning products.",
    "Explain to an older viewer how to pay for an order on a phone.",
    "Write a reply to a viewer asking whether a blender can crush ice.",
    "Describe what a good stream host does in the first minute of a stream.",
    "Write a short guide to repotting a houseplant.",
)


class InstructionSetError(ValueError):
    """A generated set was asked for with a bad seed or size; the message says what would be
    valid."""


@contextmanager
def _seeded_random(seed: str) -> Iterator[None]:
    """lm-eval's checkers draw their arguments from the ``random`` module; seed it for one prompt
    and give every other user of ``random`` its state back."""
    state = random.getstate()
    random.seed(seed)
    try:
        yield
    finally:
        random.setstate(state)


def _registry():
    ensure_nltk_data()
    from lm_eval.tasks.ifeval.instructions_registry import INSTRUCTION_CONFLICTS, INSTRUCTION_DICT

    conflicts = {key: set(value) | {key} for key, value in INSTRUCTION_CONFLICTS.items()}
    for (
        key,
        value,
    ) in INSTRUCTION_CONFLICTS.items():  # symmetric, without touching lm-eval's own dict
        for other in value:
            conflicts.setdefault(other, {other}).add(key)
    return INSTRUCTION_DICT, conflicts


def _draw_ids(rng: random.Random, ids: list[str], conflicts: dict[str, set[str]]) -> list[str]:
    count = rng.choices((1, 2, 3), weights=(5, 4, 1))[0]
    chosen: list[str] = []
    for _ in range(count):
        allowed = [
            i
            for i in ids
            if i not in chosen
            and not any(i in conflicts.get(c, ()) or c in conflicts.get(i, ()) for c in chosen)
        ]
        if not allowed:
            break
        chosen.append(rng.choice(allowed))
    return chosen


def _scorable(registry, instruction_id: str, text: str, args: dict) -> bool:
    """Whether the scorer checks what the text asks: lm-eval rebuilds each checker from the stored
    arguments (dropping empty ones) and redraws any it finds inconsistent (a paragraph number beyond
    the paragraph count), so the rebuilt text must be the same; and no "less than 1" count (no
    sentence, no word, no letter), which no answer can meet."""
    relation = args.get("relation") or args.get("let_relation") or args.get("capital_relation")
    counts = [
        v
        for k, v in args.items()
        if k in ("num_sentences", "num_words", "frequency", "let_frequency", "capital_frequency")
    ]
    if relation == "less than" and any(isinstance(c, int) and c <= 1 for c in counts):
        return False
    if "nth_paragraph" in args and not 1 <= args["nth_paragraph"] <= (
        args.get("num_paragraphs") or 0
    ):
        # lm-eval draws such a paragraph number (up to the count + 1) and redraws it when scoring
        return False
    kept = {k: v for k, v in args.items() if v}
    for attempt in range(
        3
    ):  # lm-eval redraws inconsistent arguments at random: any redraw shows up as a change
        with _seeded_random(f"rebuild:{attempt}"):
            if registry[instruction_id](instruction_id).build_description(**kept) != text:
                return False
    return True


def generated_prompt(index: int, *, seed: int = DEFAULT_SEED) -> dict:
    """Prompt number ``index`` (0-based) of the set with ``seed``, in the official IFEval format."""
    registry, conflicts = _registry()
    rng = random.Random(f"instruction-set:{seed}:{index}")
    ids = sorted(registry)
    task = rng.choice(TASKS)
    chosen = _draw_ids(rng, ids, conflicts)
    # the repeat instruction goes last: the request to repeat is everything before it
    chosen.sort(key=lambda i: i == "combination:repeat_prompt")
    texts, kwargs = [task], []
    with _seeded_random(f"instruction-args:{seed}:{index}"):
        for instruction_id in chosen:
            checker = registry[instruction_id](instruction_id)
            if instruction_id == "combination:repeat_prompt":
                text = checker.build_description(prompt_to_repeat=" ".join(texts))
            else:
                text = checker.build_description()
                while not _scorable(
                    registry, instruction_id, text, checker.get_instruction_args() or {}
                ):
                    text = checker.build_description()  # the next draw of lm-eval's own arguments
            texts.append(text)
            kwargs.append(
                {k: v for k, v in (checker.get_instruction_args() or {}).items() if v is not None}
            )
    return {
        "key": index + 1,
        "prompt": " ".join(texts),
        "instruction_id_list": chosen,
        "kwargs": kwargs,
    }


def generated_prompts(*, size: int | None = None, seed: int = DEFAULT_SEED) -> list[dict]:
    """The first ``size`` prompts (default :data:`DEFAULT_SIZE`) of the set with ``seed``."""
    size = DEFAULT_SIZE if size is None else size
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= 100_000:
        raise InstructionSetError(
            f"size: give a whole number of prompts between 0 and 100000, got {size!r}"
        )
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**31:
        raise InstructionSetError(
            f"seed: give a whole number between 0 and {2**31 - 1}, got {seed!r}"
        )
    return [generated_prompt(i, seed=seed) for i in range(size)]


def prompts_digest(prompts: list[dict]) -> str:
    """sha256 of the prompts as scored (text, instructions, arguments): two runs pair only on equal
    digests."""
    text = json.dumps(
        [[p["prompt"], p["instruction_id_list"], p["kwargs"]] for p in prompts],
        sort_keys=True,
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
