"""Stage 2 (General OPD) for two steps on the tiny model, and the shipped general prompt set."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from evaluation.ifeval import load_ifeval_prompts
from tests.training.helpers import answer_with_runtime, changed_tensors
from training.general_prompts import CATEGORIES, builtin_prompts, load_general_prompts

OFFICIAL = Path(os.environ.get("HARNESS_TEST_IFEVAL_OFFICIAL", "/nonexistent/input_data.jsonl"))
IFEVAL_FILES = [
    pytest.param(None, id="generated"),  # the default: the project's generated set
    pytest.param(
        Path(__file__).parents[1] / "fixtures" / "ifeval" / "input_data.jsonl", id="fixture"
    ),
    pytest.param(
        OFFICIAL,
        id="official",
        marks=pytest.mark.skipif(
            not OFFICIAL.is_file(),
            reason="HARNESS_TEST_IFEVAL_OFFICIAL names no official IFEval file",
        ),
    ),
]


@pytest.mark.parametrize("ifeval_source", IFEVAL_FILES)
def test_builtin_prompt_set_size_categories_and_no_ifeval_overlap(ifeval_source):
    rows = builtin_prompts()
    assert len(rows) >= 300
    assert {r["category"] for r in rows} == set(CATEGORIES)
    assert all(sum(r["category"] == c for r in rows) >= 50 for c in CATEGORIES)
    assert len({r["prompt"] for r in rows}) == len(rows)

    def grams(text, n=8):
        words = re.findall(r"[a-z']+", text.lower())
        return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}

    ifeval_grams = set().union(
        *(grams(p["prompt"]) for p in load_ifeval_prompts(source=ifeval_source))
    )
    assert ifeval_grams  # the checker really read IFEval
    assert not [r["id"] for r in rows if grams(r["prompt"]) & ifeval_grams]


def test_user_prompt_file_is_accepted(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": "Name a colour."},
                    {"role": "assistant", "content": "Blue."},
                ]
            }
        )
        + "\n"
        + json.dumps({"prompt": "Count to three."})
        + "\n"
    )
    prompts = load_general_prompts(str(path), limit=10, seed=0)
    assert sorted(p[0]["content"] for p in prompts) == ["Count to three.", "Name a colour."]


def test_opd_two_steps(sft_run, tmp_path):
    from training.opd_config import OPDStageConfig
    from training.opd_trainer import run_opd
    from training.runs import read_metrics, read_model_card

    out = tmp_path / "opd"
    run_opd(
        OPDStageConfig(
            model=str(sft_run / "final"),
            output_dir=str(out),
            max_steps=2,
            save_steps=1,
            learning_rate=1e-2,
            max_completion_length=12,
            max_prompts=8,
        )
    )
    rows = [r for r in read_metrics(out) if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2] and all(r["loss"] >= 0 for r in rows)
    assert changed_tensors(sft_run / "final", out / "final")
    card = read_model_card(out)
    assert card["stage"] == "opd" and card["extra"]["divergence"] == "reverse KL"
    assert card["extra"]["teacher"].endswith(
        "smollm2-tiny-random"
    )  # the frozen base model, not the SFT one
    traj = answer_with_runtime(out / "final")
    assert traj.model_calls and traj.model_calls[0].error is None and traj.reply
