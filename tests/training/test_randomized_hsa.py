"""Domain-randomized HSA (training.randomized): a fresh Harness state per group of cases, reseeded
each data epoch, in curriculum order, with recovery trajectories recorded by the runtime."""

from __future__ import annotations

import json

import pytest

from training.sft_config import SFTStageConfig


def _config(**overrides) -> SFTStageConfig:
    values = dict(
        model="tiny",
        output_dir="unused",
        hsa_mode="randomized",
        hsa_variants=1,
        max_cases=16,
        hsa_group_size=2,
        hsa_epochs=2,
        hsa_curriculum=[1, 2],
        hsa_original_share=0.2,
        recovery_unknown_tool_share=0.3,
        recovery_grounding_share=0.3,
        recovery_stop_gate_share=0.1,
    )
    values.update(overrides)
    return SFTStageConfig(**values)


def _build(config):
    from harness import demo_harness_dir
    from training.trajectory_data import build_sft_examples

    return build_sft_examples(config=config, harness_dir=demo_harness_dir())


@pytest.fixture(scope="module")
def built():
    config = _config()
    assert config.check() == ""
    return _build(config)


def test_a_fresh_state_per_group_reseeded_each_epoch_in_curriculum_order(built):
    examples, report = built
    assert report["hsa_mode"] == "randomized"
    assert report["states_drawn"] == 16  # 16 cases in groups of 2, two epochs
    assert report["states_variant"] >= 8 and report["distinct_states"] >= report["states_variant"]
    by_epoch: dict[int, set] = {0: set(), 1: set()}
    for ex in examples:
        meta = ex["meta"]
        if meta["harness"] != "original":
            by_epoch[meta["hsa_epoch"]].add(meta["harness_digest"])
            # curriculum [1, 2]: one family at a time, then pairs
            assert len(meta["hsa_dims"]) == meta["hsa_epoch"] + 1, meta
    assert by_epoch[0] and by_epoch[1] and not by_epoch[0] & by_epoch[1]
    # groups share a state: every state's trajectories come from at most 2 cases
    cases_of: dict[str, set] = {}
    for ex in examples:
        cases_of.setdefault(ex["meta"]["harness_digest"], set()).add(ex["meta"]["case_id"])
    assert max(len(v) for k, v in cases_of.items()) <= 2 * 2 or len(cases_of) > 1


def test_recovery_trajectories_carry_the_runtimes_own_feedback_and_never_train_the_mistake(built):
    examples, report = built
    recovery = report["recovery"]
    assert recovery["unknown-tool"]["trajectories"] >= 1
    assert recovery["grounding"]["trajectories"] >= 1
    for kind in ("unknown-tool", "grounding", "stop-gate"):
        cell = recovery[kind]
        assert cell["share_of_accepted"] == round(cell["trajectories"] / report["accepted"], 4)
    unknown = [ex for ex in examples if ex["meta"]["recovery"] == "unknown-tool"]
    assert any("unknown tool '" in m["content"] for ex in unknown for m in ex["prompt"])
    for ex in unknown:  # the runtime's message names the wrong call; no completion repeats it
        assert ex["meta"]["retry_kept"] is True
        for message in ex["prompt"]:
            if "unknown tool '" in message["content"]:
                wrong = message["content"].split("unknown tool '")[1].split("'")[0]
                assert f'"{wrong}"' not in ex["completion"][0]["content"]
    grounding = [ex for ex in examples if ex["meta"]["recovery"] == "grounding"]
    assert any("without a tool result" in ex["prompt"][-1]["content"] for ex in grounding)
    # the blocked reply is context, never a target: a grounding trajectory trains 3 of its 4 turns
    assert all(ex["meta"]["turn"] != 1 for ex in grounding)


def test_per_group_requirements_mask_skills_and_gold_stays_valid(built):
    examples, report = built
    assert report["states_masking_skills"] >= 1
    assert report["unmappable"] == 0 if "unmappable" in report else True
    assert report["accepted"] == report["trajectories"] - report.get("rejected_by_judge", 0) - (
        report.get("unmappable", 0)
    )


def test_the_original_share_holds_the_original_harness():
    examples, report = _build(
        _config(
            max_cases=4,
            hsa_epochs=1,
            hsa_original_share=1.0,
            recovery_unknown_tool_share=0.0,
            recovery_grounding_share=0.0,
            recovery_stop_gate_share=0.0,
        )
    )
    assert report["states_original"] == report["states_drawn"] == 2
    assert {ex["meta"]["harness"] for ex in examples} == {"original"}


def test_each_case_meets_k_states_an_epoch():
    examples, report = _build(
        _config(
            max_cases=4,
            hsa_variants=3,
            hsa_epochs=1,
            hsa_original_share=0.0,
            recovery_unknown_tool_share=0.0,
            recovery_grounding_share=0.0,
            recovery_stop_gate_share=0.0,
        )
    )
    assert report["states_drawn"] == 6 and report["states_per_case_per_epoch"] == 3
    states_of: dict[str, set] = {}
    for ex in examples:
        states_of.setdefault(ex["meta"]["case_id"], set()).add(ex["meta"]["harness_digest"])
    assert len(states_of) == 4 and all(len(v) == 3 for v in states_of.values())


def test_bad_settings_name_the_field():
    assert _config(hsa_mode="random").check().startswith("hsa_mode:")
    assert _config(hsa_original_share=1.5).check().startswith("hsa_original_share:")
    assert _config(hsa_curriculum=[1, 7]).check().startswith("hsa_curriculum:")
    assert (
        _config(recovery_grounding_share=0.9)
        .check()
        .startswith("recovery_unknown_tool_share: the three recovery shares")
    )
    assert _config(teacher="openai:http://x/v1:m").check().startswith("hsa_mode:")


def test_the_curriculum_keeps_its_order_in_batches():
    from training.shared_prefix import PrefixGroupedSampler

    head_a, head_b = [1, 5, 5, 1], [1, 6, 6, 1]
    ids = [head_a + [i] for i in range(4)] + [head_b + [i] for i in range(4)]
    phases = [1, 1, 0, 0, 1, 0, 1, 0]
    for group in (True, False):
        sampler = PrefixGroupedSampler(ids, batch_size=2, seed=3, phases=phases, group=group)
        order = list(sampler)
        assert sorted(order) == list(range(8))
        assert [phases[i] for i in order] == [0, 0, 0, 0, 1, 1, 1, 1]
    # without phases the sampler forms the batches it always did
    plain = PrefixGroupedSampler(ids, batch_size=2, seed=3)
    assert all(len({ids[i][1] for i in batch}) == 1 for batch in plain.batches())


def test_prefix_saving_counts_what_one_prefix_pass_saves():
    from training.shared_prefix import MIN_SHARED_TOKENS, prefix_saving

    head = list(range(100, 100 + 2 * MIN_SHARED_TOKENS))
    ids = [[1, *head, 7, 8], [1, *head, 9], [1, 2, 3], [1, 2, 4]]
    facts = prefix_saving(ids, batch_size=2)
    shared = 1 + len(head)
    assert facts["tokens_not_reencoded"] == shared  # the second row of the sharing batch
    assert facts["batches_sharing"] == 1
    assert facts["tokens"] == sum(len(r) for r in ids)
    assert facts["tokens_saved_pct"] == round(100 * shared / facts["tokens"], 2)


def test_the_data_command_prints_the_report_and_the_prefix_saving(tmp_path, capsys):
    from training.cli import main

    out = tmp_path / "examples.jsonl"
    code = main(
        [
            "data",
            "--model",
            "tiny",
            "--hsa-mode",
            "randomized",
            "--max-cases",
            "6",
            "--hsa-group-size",
            "3",
            "--hsa-variants",
            "1",
            "--per-device-train-batch-size",
            "2",
            "--out",
            str(out),
        ]
    )
    stdout = capsys.readouterr().out
    assert code == 0
    report = json.loads(stdout[: stdout.rindex("}") + 1])
    assert report["states_drawn"] == 2 and report["examples"] == len(out.read_text().splitlines())
    sharing = report["prefix_sharing"]
    assert sharing["batch_size"] == 2 and sharing["tokens_saved_pct"] > 0
    assert "tokens saved" in stdout
