"""Stage 3 (HSA-RL): env_mask, GDPO + zero-advantage dropping, and two GRPO steps on the tiny
model."""

from __future__ import annotations

import json

import pytest
import torch

from tests.training.helpers import answer_with_runtime, changed_tensors
from training.stage_common import checkpointing_args


class ForcedSamplingPolicy:
    """SamplingPolicy whose 'samples' are given texts (so the test knows every model token)."""

    def __new__(cls, tokenizer, texts):
        from training.sampling_policy import SamplingPolicy

        class _Forced(SamplingPolicy):
            def _sample(self, prompt_ids, settings):
                text = self.outputs.pop(0)
                ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] + [
                    self.tokenizer.eos_token_id
                ]
                return ids, [-1.0] * len(ids)

        policy = _Forced(model=None, tokenizer=tokenizer)
        policy.outputs = list(texts)
        return policy


def _runs(mask):
    runs, start = [], 0
    for i in range(1, len(mask) + 1):
        if i == len(mask) or mask[i] != mask[start]:
            runs.append((mask[start], start, i))
            start = i
    return runs


def test_env_mask_zeroes_exactly_tool_and_hook_tokens(tiny_dir):
    from transformers import AutoTokenizer

    from evaluation.cases import case_request
    from harness import demo_harness_dir, load_dir
    from harness.runtime import Agent
    from training.case_sources import training_cases
    from training.rollout import assemble_rollout

    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    source = training_cases("", limit=40)
    case = next(
        c for c in source.cases if c["category"] == "product_qa" and c["gold"]["tool_calls"]
    )
    link = case["gold"]["tool_calls"][0]["arguments"]["link_id"]
    texts = [
        '<tool_call>{"name": "get_product_info_by_link_id", '
        f'"arguments": {{"link_id": {link}}}}}</tool_call>',
        "It is in stock!",  # no reply skill loaded yet: the stop gate blocks it
        '<tool_call>{"name": "load_skill", "arguments": {"name": "item_qa"}}</tool_call>',
        case["gold"]["reference_reply"],
    ]
    policy = ForcedSamplingPolicy(tokenizer, texts)
    with Agent(
        bundle=load_dir(demo_harness_dir()),
        policy=policy,
        catalogue=source.catalogue,
        connect_mcp=False,
    ) as agent:
        traj = agent.run(case_request(case)).to_dict()
    assert traj["retries"] == 1 and traj["outcome"] == "replied" and len(policy.calls) == 4
    rollout = assemble_rollout(policy.calls, tokenizer)
    assert rollout.prompt_ids == policy.calls[0].prompt_ids
    assert len(rollout.completion_ids) == len(rollout.env_mask) == len(rollout.logprobs)
    runs = _runs(rollout.env_mask)
    model_runs = [tokenizer.decode(rollout.completion_ids[a:b]) for m, a, b in runs if m == 1]
    env_runs = [tokenizer.decode(rollout.completion_ids[a:b]) for m, a, b in runs if m == 0]
    # every model token is masked in (1), and only model tokens: each output plus its end-of-turn
    # token
    assert model_runs == [t + tokenizer.eos_token for t in texts]
    # every runtime token is masked out (0): exactly the messages the runtime added between calls
    for i, env in enumerate(env_runs):
        before, after = policy.calls[i].messages, policy.calls[i + 1].messages
        added = after[len(before) + 1 :]  # after the assistant turn: tool results and hook feedback
        expected = "\n" + "".join(
            f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in added
        )
        assert env == expected + "<|im_start|>assistant\n"
    hook = next(h["message"] for h in traj["hook_decisions"] if h["decision"] == "block")
    assert hook in env_runs[1] and not any(hook in m for m in model_runs)
    assert '"name":"get_product_info_by_link_id"' in env_runs[0]  # the tool result is env text
    assert sum(rollout.env_mask) == sum(len(c.ids) for c in policy.calls)


def test_gdpo_aggregation_and_zero_advantage_dropping_on_a_toy_batch(tiny_dir, tmp_path):
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig

    from training.rl_trainer import HarnessGRPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(tiny_dir, padding_side="left")
    # two tasks x two rollouts, two reward dimensions with known values
    known = {"a": ([1.0, 0.0], [0.0, 0.0]), "b": ([1.0, 1.0], [0.5, 0.5])}

    def rollout(prompts, trainer):
        return {
            "prompt_ids": [[1, 2, 3]] * len(prompts),
            "completion_ids": [[4, 5, 2]] * len(prompts),
            "logprobs": [[-1.0, -1.0, -1.0]] * len(prompts),
            "env_mask": [[1, 0, 1]] * len(prompts),
        }

    def pick(dim):
        def reward(prompts, completions, **kwargs):
            return [known[p][dim][prompts[:i].count(p)] for i, p in enumerate(prompts)]

        reward.__name__ = f"dim{dim}"
        return reward

    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=8,
        multi_objective_aggregation="normalize_then_sum",
        importance_sampling_level="sequence",
        loss_type="grpo",
        beta=0.0,
        report_to=[],
        use_cpu=True,
        bf16=False,
        **checkpointing_args(False),
    )
    trainer = HarnessGRPOTrainer(
        model=str(tiny_dir),
        reward_funcs=[pick(0), pick(1)],
        args=args,
        train_dataset=Dataset.from_list([{"prompt": "a"}, {"prompt": "b"}]),
        processing_class=tokenizer,
        rollout_func=rollout,
    )
    trainer.model.train()
    batch = trainer._generate_and_score_completions([{"prompt": p} for p in ("a", "a", "b", "b")])
    # group a: dim0 normalised to +-0.7071, dim1 constant -> 0; group b: all constant -> 0. summed
    # [0.7071, -0.7071, 0, 0], then divided by its std over the batch (0.8165): +-0.866... kept
    expected_a = 0.70706 / (torch.tensor([0.70706, -0.70706, 0.0, 0.0]).std().item() + 1e-4)
    assert batch["advantages"].tolist() == pytest.approx([expected_a, -expected_a], rel=1e-3)
    assert batch["completion_ids"].shape[0] == 2  # group b dropped
    assert batch["tool_mask"].tolist() == [[1, 0, 1], [1, 0, 1]]
    assert float(batch["num_items_in_batch"]) == 4.0  # 2 kept samples x 2 model tokens
    assert trainer._metrics["train"]["dropped_zero_advantage"] == [2.0]


def test_drop_zero_advantage_keeps_chunks_divisible():
    from training.advantages import drop_zero_advantage

    batch = {
        "advantages": torch.tensor([0.0, 1.0, 0.0, -1.0, 0.5, 0.0]),
        "completion_mask": torch.ones(6, 3, dtype=torch.long),
        "num_items_in_batch": torch.tensor(18.0),
        "extra": [0, 1, 2, 3, 4, 5],
    }
    out, dropped = drop_zero_advantage(batch, multiple=2)
    assert dropped == 2 and out["extra"] == [0, 1, 3, 4]  # one zero sample kept to fill the chunk
    assert float(out["num_items_in_batch"]) == 12.0
    none, dropped = drop_zero_advantage({**batch, "advantages": torch.zeros(6)}, multiple=1)
    assert dropped == 5 and none["completion_mask"].shape[0] == 1


def test_cot_length_term():
    from training.rewards import cot_length_q

    assert [cot_length_q(n) for n in (0, 100, 150, 200, 500)] == [0.0, 0.0, 0.5, 1.0, 1.0]


@pytest.fixture(scope="module")
def rl_run(tmp_path_factory, sft_run):
    from training.rl_config import RLStageConfig
    from training.rl_trainer import run_rl

    out = tmp_path_factory.mktemp("rl")
    config = RLStageConfig(
        model=str(sft_run / "final"),
        output_dir=str(out),
        max_steps=2,
        save_steps=1,
        learning_rate=5e-3,
        num_generations=2,
        per_device_train_batch_size=2,
        max_new_tokens=6,
        max_cases=4,
        top_p=1.0,
        max_rounds=2,
        variant_pool_size=1,
        augmented_fraction=0.5,
        beta=0.0,
        seed=1,
    )

    def varied(completions, **kwargs):  # a random tiny model fails every task alike: add a signal
        return [sum(ch in "aeiou" for ch in str(c)) / max(1, len(str(c))) for c in completions]

    run_rl(config, extra_rewards={"vowel_share": (varied, 1.0)})
    return out


def test_rl_two_steps_log_rewards_and_change_weights(rl_run, sft_run):
    from training.runs import read_metrics, read_model_card

    rows = [r for r in read_metrics(rl_run) if "loss" in r]
    assert [r["step"] for r in rows] == [1, 2]
    for name in ("accuracy", "effectiveness", "tool_rationality", "skill_selection", "cot_length"):
        assert f"rewards/{name}/mean" in rows[0]
    assert all("completions/mean_length" in r and "dropped_zero_advantage" in r for r in rows)
    assert changed_tensors(sft_run / "final", rl_run / "final")
    card = read_model_card(rl_run)
    assert card["stage"] == "rl" and card["parent_checkpoint"] == str(sft_run / "final")
    assert card["base_model"].endswith("smollm2-tiny-random")
    assert json.loads((rl_run / "config.json").read_text())["drop_zero_advantage"] is True


def test_rl_checkpoint_answers_through_runtime(rl_run):
    traj = answer_with_runtime(rl_run / "final")
    assert traj.model_calls and traj.model_calls[0].error is None and traj.reply


def test_rollouts_on_the_engine_sample_what_generate_samples(tiny_dir):
    """Greedy: the same tokens and log-probabilities on the engine as with generate; sampled: the
    log-probability is the sampled token's under the tempered distribution."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from harness.policies import GenerationSettings
    from training.sampling_policy import SamplingPolicy, rollout_engine

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_dir)
    messages = [
        {"role": "system", "content": "You are the host. " * 30},
        {"role": "user", "content": "price?"},
    ]
    greedy = GenerationSettings(temperature=0.0, max_new_tokens=16)
    engine = rollout_engine(model)
    assert engine is not None
    try:
        on_engine = SamplingPolicy(model=model, tokenizer=tokenizer, settings=greedy, engine=engine)
        plain = SamplingPolicy(model=model, tokenizer=tokenizer, settings=greedy)
        on_engine.generate(messages)
        plain.generate(messages)
        a, b = on_engine.calls[0], plain.calls[0]
        assert a.ids == b.ids and a.prompt_ids == b.prompt_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
        sampled = SamplingPolicy(
            model=model,
            tokenizer=tokenizer,
            engine=engine,
            settings=GenerationSettings(temperature=0.7, top_p=1.0, max_new_tokens=8, seed=3),
        )
        sampled.generate(messages)
        call = sampled.calls[0]
        with torch.no_grad():
            logits = model(torch.tensor([call.prompt_ids + call.ids])).logits[0]
        first = torch.log_softmax(logits[len(call.prompt_ids) - 1] / 0.7, dim=-1)[call.ids[0]]
        assert call.logprobs[0] == pytest.approx(float(first), abs=1e-4)
    finally:
        engine.close()
    assert not engine._thread.is_alive()
