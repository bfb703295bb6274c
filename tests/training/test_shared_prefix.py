"""Shared-prefix batches (training.shared_prefix) are the same training as the plain path.

Tolerance, stated once: the loss to 1e-6 (relative), and every parameter's gradient to 1e-4 of its
norm (the norm of the difference over the norm of the plain gradient). Only the order of float
sums differs: the plain batch adds each row's copy of the prefix's gradient inside the layer, the
shared path adds the rows' gradients through the expansion. Measured: loss equal to the last bit
on the tiny model, gradients within 5e-7 of their norm.
"""

from __future__ import annotations

import logging

import pytest
import torch

LOSS_RTOL = 1e-6
GRAD_RTOL = 1e-4


@pytest.fixture(autouse=True)
def trained_positions_only(monkeypatch):
    """Score only the labelled positions, as the stages do on CPU (training.cpu_scoring): the same
    numbers (tests/training/test_cpu_scoring.py), a fraction of the time."""
    import trl.trainer.utils as utils

    monkeypatch.setattr(utils, "_use_triton", lambda device: True)


def _fused(model_dir, *, lora: bool = False):
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    model = AutoModelForCausalLM.from_pretrained(model_dir)
    add_fused_lm_head(model)  # the head the SFT and GRPO trainers score with
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(
            model,
            LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", init_lora_weights=False),
        )
    return model.train()


def _batch(*, rows=4, prefix=200, suffix=60, seed=0):
    """Rows sharing ``prefix`` tokens, right-padded suffixes, the loss on each row's last 40 real
    tokens."""
    generator = torch.Generator().manual_seed(seed)
    shared = torch.randint(0, 49152, (1, prefix), generator=generator).expand(rows, -1)
    ids = torch.cat([shared, torch.randint(0, 49152, (rows, suffix), generator=generator)], dim=1)
    mask = torch.ones_like(ids)
    for row in range(1, rows):
        mask[row, ids.shape[1] - 7 * row :] = 0  # right padding of different lengths
    labels = ids.masked_fill(mask == 0, -100)
    for row in range(rows):
        real = int(mask[row].sum())
        labels[row, : real - 40] = -100
    return ids, mask, labels


def _loss_and_grads(model, ids, mask, labels, *, shared: bool):
    from training.shared_prefix import shared_prefix

    model.zero_grad()
    stats = None
    if shared:
        with shared_prefix(model) as stats:
            out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
            out.loss.backward()
    else:
        out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
        out.loss.backward()
    grads = {
        name: p.grad.detach().clone() for name, p in model.named_parameters() if p.requires_grad
    }
    return out.loss.detach(), grads, stats


def _assert_same_training(model, batch):
    plain_loss, plain_grads, _ = _loss_and_grads(model, *batch, shared=False)
    loss, grads, stats = _loss_and_grads(model, *batch, shared=True)
    assert stats.shared_batches == 1 and stats.plain_batches == 0  # the shared path did run
    torch.testing.assert_close(loss, plain_loss, rtol=LOSS_RTOL, atol=0)
    assert grads.keys() == plain_grads.keys()
    for name, grad in plain_grads.items():
        assert grad is not None and grads[name] is not None, name
        assert float(grad.norm()) > 0, (
            f"{name}: no gradient reached it, the comparison would prove nothing"
        )
        relative = float((grads[name] - grad).norm() / grad.norm())
        assert relative <= GRAD_RTOL, f"{name}: gradient differs by {relative:.2e} of its norm"
    return stats


def test_loss_and_every_gradient_match_the_plain_path_on_the_tiny_model(tiny_dir):
    stats = _assert_same_training(_fused(tiny_dir), _batch())
    assert stats.prefix_tokens_not_reencoded == 200 * 3


def test_loss_and_every_adapter_gradient_match_with_a_lora_adapter(tiny_dir):
    model = _fused(tiny_dir, lora=True)
    assert sum(p.requires_grad for p in model.parameters()) > 0
    _assert_same_training(model, _batch(rows=3, seed=1))


@pytest.mark.slow
def test_loss_and_every_gradient_match_on_the_default_model():
    from harness.model_cache import default_model_dir

    _assert_same_training(
        _fused(default_model_dir()), _batch(rows=2, prefix=300, suffix=50, seed=2)
    )


def test_a_batch_that_shares_too_little_runs_the_plain_path_and_says_why_once(tiny_dir, caplog):
    from training.shared_prefix import SharedPrefixStats, shared_prefix

    model = _fused(tiny_dir)
    ids, mask, labels = _batch(rows=2, prefix=8, suffix=40)
    left = mask.flip(1)  # left padding: the rows start at different places
    stats = SharedPrefixStats()
    with (
        caplog.at_level(logging.WARNING, logger="training.shared_prefix"),
        shared_prefix(model, stats),
    ):
        plain = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True).loss
        model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
        model(input_ids=ids, attention_mask=left, labels=labels, fused_lm_head=True)
    assert stats.shared_batches == 0 and stats.plain_batches == 3
    said = [r.getMessage() for r in caplog.records if "shared_prefix" in r.getMessage()]
    assert said == [
        "shared_prefix: the plain path runs for batches "
        "whose rows share fewer than 32 tokens at the "
        "start (one row, different prompts, or left padding) (said once per reason)"
    ]
    # outside the block the decoder is the plain one again
    assert "forward" not in vars(model.model)
    torch.testing.assert_close(
        model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True).loss, plain
    )


def test_generation_is_untouched(tiny_dir):
    from training.shared_prefix import shared_prefix

    model = _fused(tiny_dir).eval()
    ids = _batch(rows=2, prefix=64, suffix=1)[0]
    before = model.generate(ids, max_new_tokens=4, do_sample=False)
    with shared_prefix(model) as stats:
        during = model.generate(ids, max_new_tokens=4, do_sample=False)
    assert torch.equal(before, during) and stats.shared_batches == 0


def test_the_sampler_batches_one_harness_state_and_keeps_every_sequence_once():
    from training.shared_prefix import PrefixGroupedSampler

    start = 1  # every message opens with this token, as <|im_start|> does in ChatML
    states = {"a": [start, 10, 11, 12], "b": [start, 20, 21], "c": [start, 30]}
    rows, state_of = [], []
    for state, count in (("a", 9), ("b", 6), ("c", 3)):
        for i in range(count):
            rows.append([*states[state], start, 100 + i, 7])
            state_of.append(state)
    sampler = PrefixGroupedSampler(rows, batch_size=4, seed=0)
    order = list(sampler)
    assert sorted(order) == list(range(len(rows))) and len(sampler) == len(rows)
    batches = [order[i : i + 4] for i in range(0, len(order), 4)]
    whole_of_one_state = [b for b in batches if len(b) == 4 and len({state_of[i] for i in b}) == 1]
    assert (
        len(whole_of_one_state) == 9 // 4 + 6 // 4
    )  # every whole batch a state can fill is filled by it
    sampler.set_epoch(1)
    assert list(sampler) != order and sorted(sampler) == sorted(order)


def test_an_sft_stage_trains_through_the_shared_path(tmp_path, tiny_dir):
    """The stage's own trainer: batches of one Harness state take the shared path, and the card says
    so."""
    from training.runs import read_model_card
    from training.sft_config import SFTStageConfig
    from training.sft_trainer import run_sft

    system = (
        "You host a live stream for a shop. " * 12
    )  # a Harness system prompt: every example's start
    examples = [
        {
            "prompt": [
                {"role": "system", "content": system},
                {"role": "user", "content": f"How much is link {i}?"},
            ],
            "completion": [{"role": "assistant", "content": f"Link {i} costs {10 * i} yuan."}],
        }
        for i in range(1, 7)
    ]
    run_sft(
        SFTStageConfig(
            model="tiny",
            output_dir=str(tmp_path),
            max_steps=2,
            save_steps=2,
            per_device_train_batch_size=3,
            learning_rate=1e-3,
        ),
        examples=examples,
    )
    card = read_model_card(tmp_path)
    assert card["extra"]["shared_prefix"]["shared_batches"] == 2
    assert card["extra"]["shared_prefix"]["plain_batches"] == 0


def test_a_grpo_group_runs_under_one_harness_state():
    from training.rollout import HarnessRollout

    class Pool:
        draws = 0

        def draw(self, rng, fraction):
            Pool.draws += 1
            return f"entry{Pool.draws}"

    rollout = HarnessRollout(
        pool=Pool(),
        cases={},
        tokenizer=None,
        settings=None,
        augmented_fraction=0.5,
        failure_rate=0.0,
        harness_per_group=True,
    )
    seen = []
    rollout.run_one = lambda model, case_id, **kw: (
        seen.append((case_id, kw["entry"]))
        or {
            "assembled": type(
                "A",
                (),
                {"prompt_ids": [1], "completion_ids": [2], "logprobs": [0.0], "env_mask": [1]},
            )(),
            "trajectory": {},
            "case": {},
            "harness": kw["entry"],
            "augmented": False,
        }
    )

    class Trainer:
        model = object()
        state = type("S", (), {"global_step": 0})()
        accelerator = type("Acc", (), {"unwrap_model": staticmethod(lambda m: m)})()

    import training.rollout as module

    original = module.rollout_engine
    module.rollout_engine = lambda model: None
    try:
        out = rollout(["c1"] * 4 + ["c2"] * 4, Trainer())
    finally:
        module.rollout_engine = original
    assert [e for _, e in seen] == ["entry1"] * 4 + ["entry2"] * 4
    assert out["harness"] == ["entry1"] * 4 + ["entry2"] * 4


def test_grpo_micro_batches_keep_a_group_together():
    from training.shared_prefix import shuffle_groups

    prompts = torch.tensor(
        [[1, 1]] * 4 + [[2, 2]] * 4 + [[3, 3]] * 2
    )  # a group of 2 after zero-advantage drops
    batch = {
        "prompt_ids": prompts,
        "advantages": torch.arange(10.0),
        "case": list("aaaabbbbcc"),
        "num_items_in_batch": torch.tensor(10),
    }
    torch.manual_seed(0)
    shuffled = shuffle_groups(batch)
    runs = "".join(shuffled["case"])
    assert sorted(runs) == sorted("aaaabbbbcc") and all(c * runs.count(c) in runs for c in "abc")
    assert [int(p[0]) for p in shuffled["prompt_ids"]] == [" abc".index(c) for c in runs]
    assert shuffled["advantages"].tolist() == sorted(
        range(10), key=lambda i: runs.index("aaaabbbbcc"[i])
    )
    assert int(shuffled["num_items_in_batch"]) == 10
