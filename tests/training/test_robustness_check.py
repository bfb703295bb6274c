"""The robustness check (training.robustness): round-1 decisions under seen and unseen states."""

from __future__ import annotations

import json

from harness.policies.base import ToolCall


def _memorizing_policy(cases):
    """A model that learnt the original Harness by heart: round 1 is the gold script written with
    the original names, whatever Harness it is shown (ScriptedPolicy answers a variant's request
    with its source case's outputs)."""
    from harness import demo_harness_dir, load_dir
    from harness.policies import ScriptedPolicy
    from training.gold import gold_script

    bundle = load_dir(demo_harness_dir())
    return ScriptedPolicy({c["id"]: gold_script(c, bundle)[:1] for c in cases})


def test_round_one_is_scored_on_the_first_tool_call_its_arguments_and_the_reply_skill():
    from training.robustness import first_round

    case = {
        "gold": {
            "reply_skills": ["qa"],
            "tool_calls": [{"name": "fetch", "arguments": {"link_id": 3}}],
        }
    }
    load = "open_skill"
    right = [ToolCall("open_skill", {"name": "qa"}), ToolCall("fetch", {"link_id": 3, "x": 1})]
    assert first_round(right, load, case)["decision"] is True
    wrong_args = first_round([ToolCall("fetch", {"link_id": 1})], load, case)
    assert wrong_args["tool_name"] and not wrong_args["tool"] and not wrong_args["skill"]
    other = first_round(
        [ToolCall("search", {"q": "x"}), ToolCall("fetch", {"link_id": 3})], load, case
    )
    assert not other["tool_name"] and other["called"] == "search"


def test_a_model_that_memorized_names_fails_renames_and_passes_the_rest(tmp_path):
    from training.robustness import RobustnessConfig, product_cases, run_robustness

    config = RobustnessConfig(
        model="scripted",
        cases=2,
        families=["tool-renames", "hooks"],
        out=str(tmp_path / "check"),
    )
    results = run_robustness(config, policy=_memorizing_policy(product_cases(2)))
    summary = results["summary"]
    assert summary["original"]["original"] == {
        "n": 2,
        "tool_name": 2,
        "tool": 2,
        "skill": 2,
        "decision": 2,
    }
    assert summary["hooks"]["seen"]["decision"] == summary["hooks"]["unseen"]["decision"] == 2
    renamed = [i for i in results["items"] if i["family"] == "tool-renames"]
    assert len(renamed) == 4
    for item in renamed:  # right exactly where the state kept the tool's original name
        assert item["tool"] == (item["want"] == item["called"])
    assert any(not item["tool"] for item in renamed)
    report = (tmp_path / "check" / "report.md").read_text()
    assert "| tool-renames |" in report and "| hooks |" in report and "Wall time" in report
    saved = json.loads((tmp_path / "check" / "results.json").read_text())
    assert saved["complete"] is True and saved["summary"] == summary


def test_a_run_cut_short_goes_on_where_it_stopped(tmp_path):
    from training.robustness import RobustnessConfig, product_cases, run_robustness

    config = RobustnessConfig(model="scripted", cases=2, families=["hooks"], out=str(tmp_path))
    policy = _memorizing_policy(product_cases(2))
    first = run_robustness(config, policy=policy)
    kept = first["items"][:2]
    (tmp_path / "results.json").write_text(json.dumps({**first, "items": kept, "complete": False}))

    class Counting:
        calls = 0

    original_generate = policy.generate

    def generate(*args, **kwargs):
        Counting.calls += 1
        return original_generate(*args, **kwargs)

    policy.generate = generate
    again = run_robustness(config, policy=policy)
    assert Counting.calls == len(first["items"]) - 2
    assert again["summary"] == first["summary"]


def test_bad_settings_name_the_field():
    from training.robustness import RobustnessConfig

    assert RobustnessConfig(cases=0).check().startswith("cases:")
    assert RobustnessConfig(families=["colour"]).check().startswith("families:")
    assert RobustnessConfig(seen="all").check().startswith("seen:")


def test_a_folder_checked_on_other_cases_or_settings_is_kept_not_resumed(tmp_path, capsys):
    """Case ids are not enough to resume on: a changed world generator builds other cases under
    the same ids. A folder scored on other cases (or settings) is refused and left as it was."""
    from training.cli import main
    from training.robustness import RobustnessConfig, product_cases, run_robustness

    config = RobustnessConfig(model="tiny", cases=1, families=["hooks"], out=str(tmp_path))
    first = run_robustness(config, policy=_memorizing_policy(product_cases(1)))
    stored = json.loads((tmp_path / "results.json").read_text())
    assert stored["cases_sha256"] and stored["items"]
    stored["cases_sha256"] = "0" * 64  # as if scored on another generator's cases
    (tmp_path / "results.json").write_text(json.dumps(stored))
    before = (tmp_path / "results.json").read_text()
    args = ["robustness-check", "--model", "tiny", "--cases", "1", "--families", "hooks"]
    assert main([*args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "holds a check of other cases" in err and "give another --out" in err
    assert (tmp_path / "results.json").read_text() == before
    assert main([*args, "--cases", "2", "--out", str(tmp_path)]) == 2
    assert "holds a check of other settings" in capsys.readouterr().err
    assert len(first["items"]) == len(stored["items"])
