"""Packing per-turn examples into whole conversations: same trained tokens, fewer sequence
tokens."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.training.conftest import price_examples
from training.conversations import chains, pack
from training.turns import turn_examples

RECORDED = Path(__file__).parent / "testdata" / "retry_trajectory.json"


@pytest.fixture(scope="module")
def trajectory():
    return json.loads(RECORDED.read_text())["trajectory"]


@pytest.fixture(scope="module")
def tokenizer(tiny_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_dir)


def per_turn_completion_ids(tokenizer, example) -> list[int]:
    """What TRL trains for one prompt/completion example: the tokens after the prompt's
    rendering."""
    prompt = tokenizer.apply_chat_template(
        example["prompt"], tokenize=False, add_generation_prompt=True
    )
    whole = tokenizer.apply_chat_template(example["prompt"] + example["completion"], tokenize=False)
    assert whole.startswith(prompt)
    return tokenizer(whole[len(prompt) :], add_special_tokens=False)["input_ids"]


def trained_ids(row) -> list[int]:
    return [t for t, m in zip(row["input_ids"], row["completion_mask"], strict=True) if m]


def test_a_trajectory_packs_into_one_sequence_that_trains_each_turn_once(trajectory, tokenizer):
    examples = turn_examples(
        trajectory, strip_retries=True, meta={"case_id": "c1", "harness": "original"}
    )
    rows, facts = pack(tokenizer, list(reversed(examples)))  # turn order comes from meta
    assert len(rows) == 1 and rows[0]["turns"] == [0, 2, 3]
    expected = [t for ex in examples for t in per_turn_completion_ids(tokenizer, ex)]
    assert trained_ids(rows[0]) == expected
    assert facts["trained_tokens"] == len(expected)
    per_turn = sum(
        len(
            tokenizer(
                tokenizer.apply_chat_template(ex["prompt"] + ex["completion"], tokenize=False),
                add_special_tokens=False,
            )["input_ids"]
        )
        for ex in examples
    )
    assert facts["per_turn_tokens"] == per_turn
    assert facts["tokens"] == len(rows[0]["input_ids"]) < per_turn / 2


def test_a_kept_retry_is_context_but_never_trained(trajectory, tokenizer):
    failed_text = trajectory["model_calls"][1]["text"]
    examples = turn_examples(
        trajectory, strip_retries=False, meta={"case_id": "c1", "harness": "original"}
    )
    rows, _ = pack(tokenizer, examples)
    assert len(rows) == 1
    # the blocked reply was retried word for word once the reply skill was loaded: the sequence
    # holds it twice, and only the accepted one is trained
    assert tokenizer.decode(rows[0]["input_ids"]).count(failed_text) == 2
    trained = tokenizer.decode(trained_ids(rows[0]))
    assert trained.count(failed_text) == 1
    assert trained == "".join(ex["completion"][0]["content"] + "<|im_end|>\n" for ex in examples)


def test_a_turn_whose_context_was_rewritten_starts_a_new_sequence(trajectory, tokenizer):
    examples = turn_examples(
        trajectory, strip_retries=True, meta={"case_id": "c1", "harness": "original"}
    )
    changed = copy.deepcopy(examples)
    for later in changed[1:]:  # the system prompt was re-rendered before turn 2
        later["prompt"][0]["content"] += "\nNow presenting: link 4"
    groups = chains(changed)
    assert [g.turns for g in groups] == [[0], [2, 3]]


def test_examples_from_no_trajectory_stay_one_sequence_each(tokenizer):
    rows, facts = pack(tokenizer, price_examples(3))
    assert facts["sequences"] == 3 and [r["turns"] for r in rows] == [[0], [0], [0]]
