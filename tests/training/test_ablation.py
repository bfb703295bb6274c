"""The ablation end to end on the tiny model: every step runs, the table fills in, a rerun
resumes."""

from __future__ import annotations

import json

import pytest

from tests import artefacts
from training.ablation import MODELS, PRESETS
from training.cli import main


@pytest.mark.slow
@pytest.mark.timeout(900)  # the first test to ask builds the shared folder (minutes on 2 cores)
def test_tiny_ablation_fills_the_table_and_a_rerun_skips_finished_steps(
    tmp_path, tmp_path_factory, capsys
):
    out, done = artefacts.tiny_ablation(
        tmp_path_factory
    )  # `python -m training ablation`, built once per run
    assert done.returncode == 0 and "[ablation]" in done.stdout
    table = json.loads((out / "table.json").read_text())
    for model in MODELS:
        assert set(table["models"][model]) == {
            "live_qa",
            "variant_qa",
            "prompt_robustness",
            "ifeval",
        }, model
    assert table["models"]["hsa_sft"]["variant_qa"]["n"] == 2
    assert set(table["targets"]) == {
        "hsa_sft_vs_fixed_sft_on_T2",
        "hsa_sft_vs_fixed_sft_on_T1",
        "hsa_sft_T2_vs_T1",
        "fixed_sft_T2_vs_T1",
        "full_pipeline_vs_base_on_IFE-P",
    }
    # T1 and T2 are the same cases (T2 each under a variant): the gap is paired case by case
    assert table["targets"]["hsa_sft_T2_vs_T1"]["n"] == table["models"]["hsa_sft"]["live_qa"]["n"]
    steps = json.loads((out / "steps.json").read_text())
    assert list(steps)[:5] == [
        "train:fixed_sft",
        "train:hsa_sft",
        "train:fixed_sft_2",
        "train:hsa_sft_2",
        "eval:fixed_sft:variant_qa",
    ]
    # each SFT cell is two phases: the second continues from the first, and the cell is scored on it
    for cell in ("fixed_sft", "hsa_sft"):
        card = json.loads((out / f"{cell}_2" / "model_card.json").read_text())
        assert card["parent_checkpoint"] == str(out / cell / "final") and card["steps"] == 1
        summary = json.loads((out / "eval" / cell / "summary.json").read_text())
        assert summary["model"] == str(out / f"{cell}_2" / "final")
    assert json.loads((out / "opd" / "model_card.json").read_text())["parent_checkpoint"] == str(
        out / "hsa_sft_2" / "final"
    )
    assert all(info["done"] and info["wall_s"] > 0 for info in steps.values())
    markdown = (out / "table.md").read_text()
    assert "pending" not in markdown and "| HSA-SFT |" in markdown and "train:rl:" in markdown

    again = artefacts.private_copy(out, tmp_path / "ablation")
    before = (again / "steps.json").read_text()
    args = ["ablation", *artefacts.TINY_ABLATION_ARGS, "--output-dir", str(again)]
    assert main(args) == 0  # everything is done: nothing runs again
    assert "[ablation]" not in capsys.readouterr().out
    assert (again / "steps.json").read_text() == before


def test_the_cpu_preset_scores_at_least_100_cases_per_qa_set():
    preset = PRESETS["cpu-small"]
    assert preset.model == "local" and preset.eval_cases >= 100


def test_a_named_step_runs_alone_and_an_unknown_one_is_refused_with_the_valid_names(
    tmp_path, capsys
):
    out = tmp_path / "ablation"
    args = ["ablation", "--preset", "tiny-smoke", "--output-dir", str(out), "--eval-ifeval", "1"]
    assert main([*args, "--step", "eval:base:nonsense"]) == 2
    err = capsys.readouterr().err
    assert "unknown ablation step(s) eval:base:nonsense" in err and "eval:base:ifeval" in err
    assert not (out / "steps.json").exists()

    (out / "steps.json").write_text(json.dumps({"train:fixed_sft": {"done": True, "wall_s": 7.0}}))
    assert main([*args, "--step", "eval:base:ifeval"]) == 0
    steps = json.loads((out / "steps.json").read_text())
    assert list(steps) == [
        "train:fixed_sft",
        "eval:base:ifeval",
    ]  # another process's record is kept
    assert steps["train:fixed_sft"]["wall_s"] == 7.0 and steps["eval:base:ifeval"]["done"]
    assert not (out / "fixed_sft").exists()  # no other step ran


def test_a_folder_is_resumed_only_with_the_settings_its_finished_steps_ran_with(tmp_path, capsys):
    out = tmp_path / "ablation"
    args = ["ablation", "--preset", "tiny-smoke", "--output-dir", str(out), "--eval-ifeval", "1"]
    assert main([*args, "--step", "eval:base:ifeval"]) == 0
    saved = json.loads((out / "ablation_config.json").read_text())
    assert saved["agent_max_new_tokens"] == 8 and saved["max_new_tokens"] == 8
    table = (out / "table.md").read_text()
    assert "at most 8 new tokens per agent model call, 8 per IFEval answer" in table
    steps = (out / "steps.json").read_text()
    # agent calls capped differently: its T1 would sit beside rows scored under another cap
    code = main([*args, "--agent-max-new-tokens", "256", "--step", "eval:base:live_qa"])
    err = capsys.readouterr().err
    assert code == 2
    assert (
        "its finished steps ran with other settings (agent_max_new_tokens: 8 there, 256 now)" in err
    )
    assert "another --output-dir" in err
    assert (out / "steps.json").read_text() == steps and not (
        out / "eval" / "base" / "live_qa.jsonl"
    ).exists()
    assert json.loads((out / "ablation_config.json").read_text()) == saved  # the record stands
    assert main([*args, "--agent-max-new-tokens", "256", "--table-only"]) == 2  # nor its table
    assert json.loads((out / "ablation_config.json").read_text()) == saved
    # what changes no finished step may differ: fewer models, more bootstrap resamples
    assert main([*args, "--resamples", "300", "--table-only"]) == 0
    assert main([*args, "--resamples", "300", "--step", "eval:base:ifeval"]) == 0


def test_renamed_tool_called_counts_cases_whose_variant_renamed_the_needed_tool(tmp_path):
    from harness import load_dir
    from harness.augment import augment_bundle
    from training.ablation import Ablation, AblationConfig
    from training.case_sources import held_out_cases
    from training.hsa import merged_requirements
    from training.stage_common import resolve_harness_dir

    ablation = Ablation(AblationConfig(output_dir=str(tmp_path), eval_cases=20))
    renamed = ablation._renamed_tool_cases()
    pairs = sorted(
        (case_id, variant) for case_id, variants in renamed.items() for variant in variants
    )
    assert len(pairs) >= 2
    # the claim checked from the variant itself: the needed tool's original name is gone from its
    # registry
    cases = {c["id"]: c for c in held_out_cases()[:20]}
    case_id, variant = pairs[0]
    bundle = augment_bundle(
        bundle=load_dir(resolve_harness_dir("demo")),
        seed=int(variant[3:]),
        dims=["skills", "skill-content", "tools", "prompt", "hooks"],
        requirements=merged_requirements(list(cases.values())),
    ).bundle
    original_names = {
        t["name"] for t in cases[case_id]["gold"]["tool_calls"] if not t.get("optional")
    }
    assert original_names - set(bundle.tool_registry.names)

    (tmp_path / "steps.json").write_text(
        json.dumps({"eval:hsa_sft:variant_qa": {"done": True, "wall_s": 1.0}})
    )
    ablation.steps = json.loads((tmp_path / "steps.json").read_text())
    other = next(i for i in cases if i not in renamed)
    rows = [
        {
            "id": pairs[0][0],
            "harness": pairs[0][1],
            "reasons": ["wrong_tool_arguments"],
        },  # new name, wrong link
        {
            "id": pairs[1][0],
            "harness": pairs[1][1],
            "reasons": ["missing_tool_call"],
        },  # memorised name
        {"id": other, "harness": "original", "reasons": []},
    ]  # no renamed tool: not counted
    (tmp_path / "eval" / "hsa_sft").mkdir(parents=True)
    (tmp_path / "eval" / "hsa_sft" / "variant_qa.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    ablation._read = {}
    assert ablation._dimension("hsa_sft", "renamed_tool_called") == {
        pairs[0][0]: 1.0,
        pairs[1][0]: 0.0,
    }
    assert ablation._dimension("fixed_sft", "renamed_tool_called") is None  # not evaluated yet


def test_the_table_says_how_requests_ended(tmp_path):
    """AVG near 50 can mean 'every request ended in the fallback'; the outcome counts say which."""
    from training.ablation import Ablation, AblationConfig

    ablation = Ablation(AblationConfig(output_dir=str(tmp_path)))
    ablation._renamed = {}  # no variant renames a tool these made-up cases need
    (tmp_path / "steps.json").write_text(
        json.dumps({"eval:hsa_sft:variant_qa": {"done": True, "wall_s": 1.0}})
    )
    ablation.steps = json.loads((tmp_path / "steps.json").read_text())
    # 'b' replied half effectively: effective is Effectiveness 1 (evaluation.summary), so it does
    # not count
    ended = [
        ("a", "replied", 1.0),
        ("b", "replied", 0.5),
        ("c", "fallback", 0.0),
        ("d", "suppressed", 0.0),
        ("e", "silent", 1.0),
    ]
    rows = [
        {
            "id": i,
            "outcome": outcome,
            "effectiveness": eff,
            "avg": (1 + eff) / 2,
            "reasons": [],
            "dimensions": {},
            "harness": "hsa900001",
        }
        for i, outcome, eff in ended
    ]
    (tmp_path / "eval" / "hsa_sft").mkdir(parents=True)
    (tmp_path / "eval" / "hsa_sft" / "variant_qa.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    ablation._read = {}
    assert ablation._outcomes("hsa_sft", "variant_qa") == {
        "replied": 2,
        "effective": 1,
        "fallback": 1,
        "suppressed": 1,
        "silent": 1,
        "error": 0,
        "n": 5,
    }
    assert ablation._outcomes("fixed_sft", "variant_qa") is None
    markdown = (tmp_path / "table.md").read_text() if ablation.write_table() else ""
    assert "## How requests ended" in markdown
    assert "| HSA-SFT | pending | 2 (1 effective) / 1 / 1 / 1 of 5 |" in markdown


def test_given_checkpoints_are_scored_not_trained_and_other_models_are_left_out(
    tmp_path, lora_adapter
):
    from training.ablation import Ablation
    from training.ablation_config import AblationConfig

    config = AblationConfig(
        model="tiny",
        output_dir=str(tmp_path),
        models=["base", "fixed_sft", "hsa_sft"],
        checkpoints={"hsa_sft": str(lora_adapter)},
    )
    assert config.check() == ""
    plan = [name for name, _ in Ablation(config).plan()]
    assert (
        "train:fixed_sft" in plan and "train:hsa_sft" not in plan and "train:hsa_sft_2" not in plan
    )
    assert not any(":opd" in n or ":rl" in n for n in plan)  # neither trained nor scored
    assert {"eval:hsa_sft:variant_qa", "eval:base:ifeval", "eval:fixed_sft:live_qa"} <= set(plan)
    merged = Ablation(config).model_dir("hsa_sft")
    assert (merged / "model.safetensors").is_file()  # the adapter, merged with its base
    assert AblationConfig(models=["base", "rl"]).check().startswith("models: rl trains from opd")
    assert AblationConfig(checkpoints={"base": "x"}).check().startswith("checkpoints: base")


def test_rejudge_scores_the_stored_replies_again_with_the_current_judge_into_a_new_folder(
    tmp_path, capsys
):
    """`ablation --rejudge`: the stored rows' Accuracy/Effectiveness/AVG are the current judge's,
    the trajectory's dimensions and IFEval are the source's, the source is left as it was, and a
    folder whose rows do not match the rebuilt cases is refused with nothing written."""
    import dataclasses

    from evaluation.scoring import judge_for
    from harness import load_dir
    from training.ablation_rejudge import variant_items
    from training.case_sources import held_out_cases, world_catalogue
    from training.stage_common import resolve_harness_dir

    source = tmp_path / "source"
    config = dataclasses.replace(
        PRESETS["tiny-smoke"], output_dir=str(source), models=["base", "hsa_sft"]
    )
    cases = held_out_cases()[: config.eval_cases]
    faq = next(c for c in cases if c["category"] == "faq")
    # what the old judge let through: a welcome to a city nobody named, as the answer to a
    # shipping question, stored as full marks; and the runtime's fallback line stored as effective
    reply_of = {
        faq["id"]: (
            "Hello to Wuhan! Make yourself comfortable, we have lots more coming.",
            "replied",
        )
    }
    fallback = "Let me check that for you - one moment!"
    items = {
        "live_qa": [(c, "original") for c in cases],
        "variant_qa": variant_items(cases, harness=config.harness),
    }
    steps = {}
    for model in ("base", "hsa_sft"):
        (source / "eval" / model).mkdir(parents=True)
        for set_name, pairs in items.items():
            rows = []
            for case, harness in pairs:
                reply, outcome = reply_of.get(case["id"], (fallback, "fallback"))
                rows.append(
                    {
                        "id": case["id"],
                        "category": case["category"],
                        "harness": harness,
                        "reply": reply,
                        "route": "public",
                        "outcome": outcome,
                        "accuracy": 1,
                        "effectiveness": 1.0,
                        "avg": 1.0,
                        "rubric_avg": None,
                        "reasons": ["missing_tool_call"],
                        "dimensions": {"skill_selection": 0.5, "tool_rationality": 0.25},
                    }
                )
            (source / "eval" / model / f"{set_name}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows)
            )
            steps[f"eval:{model}:{set_name}"] = {"done": True, "wall_s": 1.0}
        (source / "eval" / model / "ifeval.jsonl").write_text('{"id": "1", "response": "x"}\n')
        (source / "eval" / model / "summary.json").write_text(
            json.dumps({"ifeval": {"n": 2, "prompt_strict": 50.0, "per_prompt": [True, False]}})
        )
        steps[f"eval:{model}:ifeval"] = {"done": True, "wall_s": 1.0}
    (source / "steps.json").write_text(json.dumps(steps))
    (source / "ablation_config.json").write_text(json.dumps(dataclasses.asdict(config)))
    before = {p: p.read_bytes() for p in source.rglob("*") if p.is_file()}

    dest = tmp_path / "judge2"
    assert main(["ablation", "--rejudge", str(source), "--output-dir", str(dest)]) == 0
    assert "Re-judged, no model called" in capsys.readouterr().out
    assert {p: p.read_bytes() for p in source.rglob("*") if p.is_file()} == before

    judge = judge_for(load_dir(resolve_harness_dir(config.harness)), catalogue=world_catalogue())
    rows = [json.loads(line) for line in (dest / "eval/hsa_sft/live_qa.jsonl").open()]
    by_id = {r["id"]: r for r in rows}
    welcome = by_id[faq["id"]]
    assert welcome["accuracy"] == 0 and welcome["effectiveness"] == 0.0  # invented city, no answer
    assert welcome["rejudged"]["old"]["avg"] == 1.0
    for case in cases:
        row = by_id[case["id"]]
        verdict = judge.judge(case=case, reply=row["reply"])
        assert (row["accuracy"], row["avg"]) == (verdict.accuracy, verdict.avg) or (
            row["outcome"] == "fallback" and row["effectiveness"] == 0.0
        )
        # the trajectory's scores are the source's: the rows keep no trajectory
        assert (
            row["dimensions"]["tool_rationality"] == 0.25 and "missing_tool_call" in row["reasons"]
        )
    assert all(r["effectiveness"] == 0.0 for r in rows if r["outcome"] == "fallback")
    table = json.loads((dest / "table.json").read_text())
    assert table["models"]["hsa_sft"]["live_qa"]["score"] == 100 * sum(
        r["avg"] for r in rows
    ) / len(rows)
    assert table["models"]["hsa_sft"]["live_qa"]["score"] < 100  # the source's table said 100
    assert table["models"]["hsa_sft"]["ifeval"]["score"] == 50.0  # copied, not judged
    summary = json.loads((dest / "eval/hsa_sft/summary.json").read_text())
    assert summary["live_qa"]["avg"] < 100 and summary["ifeval"]["prompt_strict"] == 50.0
    markdown = (dest / "table.md").read_text()
    assert "old judge" in markdown and "no model called" in markdown

    # the folder's own sets/ re-judge it again; a row that is not its rebuilt case is refused
    again = tmp_path / "again"
    args = ["ablation", "--rejudge", str(source), "--rejudge-sets", str(dest / "sets")]
    assert main([*args, "--output-dir", str(again)]) == 0
    assert (again / "table.json").read_text() == (dest / "table.json").read_text().replace(
        "judge2", "again"
    )
    path = source / "eval/base/live_qa.jsonl"
    path.write_text(path.read_text().replace('"category": "faq"', '"category": "chitchat"'))
    assert main([*args, "--output-dir", str(tmp_path / "refused")]) == 2
    assert f"row {faq['id']} ran a chitchat case" in capsys.readouterr().err
    assert not (tmp_path / "refused").exists()


def test_a_partial_table_counts_unfinished_evaluations_and_says_so(tmp_path, capsys):
    """--table-only --partial: a long CPU ablation shows the cases its running evaluations scored,
    marked partial; without --partial they stay pending, and --partial alone is refused."""
    out = tmp_path / "ablation"
    args = ["ablation", "--preset", "tiny-smoke", "--output-dir", str(out)]
    rows = [
        {"id": i, "outcome": "replied", "effectiveness": eff, "avg": (1 + eff) / 2, "reasons": []}
        for i, eff in (("live_qa-0001", 1.0), ("live_qa-0002", 0.0))
    ]
    (out / "eval" / "hsa_sft").mkdir(parents=True)
    (out / "eval" / "hsa_sft" / "live_qa.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in rows)
    )
    assert main([*args, "--table-only"]) == 0
    assert "| HSA-SFT | pending |" in (out / "table.md").read_text()
    capsys.readouterr()
    assert main([*args, "--table-only", "--partial"]) == 0
    table = (out / "table.md").read_text()
    assert "| HSA-SFT | 75.0 (partial, n=2) | pending |" in table
    assert "eval:hsa_sft:live_qa 2 of 3 scored so far" in table
    assert "2 (1 effective) / 0 / 0 / 0 of 2" in table
    assert json.loads((out / "table.json").read_text())["partial"] == {"eval:hsa_sft:live_qa": 2}
    assert (
        not (out / "steps.json").exists()
        or "eval:hsa_sft:live_qa" not in (out / "steps.json").read_text()
    )  # counted, not recorded as done
    capsys.readouterr()
    assert main([*args, "--partial"]) == 2
    assert "--partial goes with --table-only" in capsys.readouterr().err
