"""``python -m harness augment``: writes a valid bundle and says what changed."""

from __future__ import annotations

import json

from harness import demo_harness_dir, load_dir
from harness.cli import main


def test_augment_writes_valid_bundle_mapping_and_summary(tmp_path, capsys):
    out = tmp_path / "variant"
    assert (
        main(
            [
                "augment",
                "--harness",
                str(demo_harness_dir()),
                "--seed",
                "3",
                "--out",
                str(out),
                "--dims",
                "tools,hooks",
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    bundle = load_dir(out)
    mapping = json.loads((tmp_path / "variant.mapping.json").read_text())
    assert mapping["dims"] == ["tools", "hooks"] and mapping["variant_digest"] == bundle.digest
    some_old, some_new = next(iter(mapping["tools"].items()))
    assert f"tool renamed: {some_old} -> {some_new}" in printed
    assert "retry policy changed" in printed or "hook " in printed
    assert set(bundle.skills) == set(load_dir(demo_harness_dir()).skills)


def test_keep_skills_are_never_masked(tmp_path):
    for seed in range(6):
        out = tmp_path / f"v{seed}"
        assert (
            main(
                [
                    "augment",
                    "--harness",
                    str(demo_harness_dir()),
                    "--seed",
                    str(seed),
                    "--out",
                    str(out),
                    "--dims",
                    "skills",
                    "--keep-skills",
                    "greet,thanks,refusal",
                    "--quiet",
                ]
            )
            == 0
        )
        mapping = json.loads((tmp_path / f"v{seed}.mapping.json").read_text())
        assert not {"greet", "thanks", "refusal"} & set(mapping["masked_skills"])


def test_user_errors_are_explained(tmp_path, capsys):
    harness = str(demo_harness_dir())
    assert (
        main(
            [
                "augment",
                "--harness",
                harness,
                "--seed",
                "1",
                "--out",
                str(tmp_path / "a"),
                "--dims",
                "skills,colours",
            ]
        )
        == 2
    )
    assert "unknown dimension(s) colours; choose from: skills" in capsys.readouterr().err
    assert (
        main(
            [
                "augment",
                "--harness",
                harness,
                "--seed",
                "1",
                "--out",
                str(tmp_path / "a"),
                "--keep-skills",
                "nope",
            ]
        )
        == 2
    )
    assert "--keep-skills/--cases name nope" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x.txt").write_text("mine")
    assert (
        main(["augment", "--harness", harness, "--seed", "1", "--out", str(tmp_path / "full")]) == 2
    )
    assert "not empty" in capsys.readouterr().err
    assert (tmp_path / "full" / "x.txt").read_text() == "mine"
    bad = tmp_path / "env.yaml"
    bad.write_text("skills: 3\n")
    assert (
        main(
            [
                "augment",
                "--harness",
                harness,
                "--seed",
                "1",
                "--out",
                str(tmp_path / "b"),
                "--envelope",
                str(bad),
            ]
        )
        == 2
    )
    assert "env.yaml:1: skills: expected object" in capsys.readouterr().err


def test_cases_file_protects_every_gold_skill_and_reply_length(tmp_path, capsys):
    from .conftest import DATA

    gold = {
        "item_qa",
        "faq_reply",
        "greet",
        "chillchat",
        "tool_strategy_switch",
        "change_order",
        "tool_strategy_benefit",
    }
    for seed in range(4):
        out = tmp_path / f"v{seed}"
        assert (
            main(
                [
                    "augment",
                    "--harness",
                    str(demo_harness_dir()),
                    "--seed",
                    str(seed),
                    "--out",
                    str(out),
                    "--cases",
                    str(DATA / "gold_cases.jsonl"),
                    "--quiet",
                ]
            )
            == 0
        )
        mapping = json.loads((tmp_path / f"v{seed}.mapping.json").read_text())
        assert not gold & set(mapping["masked_skills"])
        assert load_dir(out).prompt.max_reply_chars >= len(
            "Orders ship within 48 hours of payment."
        )
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "gold": {}}\nnot json\n')
    assert (
        main(
            [
                "augment",
                "--harness",
                str(demo_harness_dir()),
                "--seed",
                "1",
                "--out",
                str(tmp_path / "b"),
                "--cases",
                str(bad),
            ]
        )
        == 2
    )
    assert "bad.jsonl:2: not valid JSON" in capsys.readouterr().err
