"""``python -m evaluation make-variant-set``: cases bound to variants, gold labels remapped."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evaluation.__main__ import main as evaluation_main
from evaluation.cases import load_cases
from evaluation.variant_set import VariantSetError, load_variant_set, make_variant_set
from harness import demo_harness_dir, load_dir
from tests import artefacts

from .conftest import DATA


def _tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.name != "manifest.json"
    }


def _assert_gold_served(out: Path) -> int:
    pairs = load_variant_set(out)
    bundles: dict = {}
    for case, harness in pairs:
        bundle = bundles.get(harness) or bundles.setdefault(harness, load_dir(harness))
        gold = case["gold"]
        for skill in gold.get("reply_skills", []) + gold.get("strategy_skills", []):
            assert skill in bundle.skills, (case["id"], skill)
        for call in gold.get("tool_calls", []):
            assert bundle.tool_registry.get(call["name"]) is not None, (case["id"], call)
        mapping = json.loads(harness.with_name(harness.name + ".mapping.json").read_text())
        assert mapping["variant_digest"] == bundle.digest
        assert f"harness:{harness.name}" in case["tags"]
    return len(pairs)


@pytest.fixture(scope="module")
def world_cases(tmp_path_factory) -> Path:
    world, root = artefacts.world(tmp_path_factory, 3), tmp_path_factory.mktemp("world")
    shutil.copy(world / "catalogue.json", root / "catalogue.json")  # the cases name it beside them
    subset = root / "live_qa_120.jsonl"
    subset.write_text("".join((world / "live_qa.jsonl").read_text().splitlines(True)[:120]))
    return subset


@pytest.fixture(scope="module")
def few_world_cases(world_cases) -> Path:
    subset = world_cases.with_name("live_qa_40.jsonl")
    subset.write_text("".join(world_cases.read_text().splitlines(True)[:40]))
    return subset


def test_every_case_is_bound_to_a_valid_variant_with_remapped_gold(tmp_path):
    out = tmp_path / "t2"
    manifest = make_variant_set(
        set_path=DATA / "gold_cases.jsonl",
        harness_dir=demo_harness_dir(),
        variants=2,
        out=out,
        share=1,
        workers=1,
    )
    assert manifest["cases"] == 12 and manifest["distinct_harnesses"] == 12
    assert _assert_gold_served(out) == 12
    ids = [c["id"] for c in load_cases(out / "cases.jsonl")]
    assert ids[:2] == ["price-3~v0", "faq-ship~v0"] and ids[6] == "price-3~v1"


def test_generated_live_qa_cases_keep_their_gold_under_shared_variants(world_cases, tmp_path):
    out = tmp_path / "t2"
    manifest = make_variant_set(
        set_path=world_cases,
        harness_dir=demo_harness_dir(),
        variants=1,
        out=out,
        share=8,
        workers=1,
    )
    assert manifest["cases"] == 120 and 15 <= manifest["distinct_harnesses"] < 120
    assert _assert_gold_served(out) == 120
    from evaluation.runner import resolve_catalogue

    catalogue = resolve_catalogue(out / "cases.jsonl", load_cases(out / "cases.jsonl"))
    assert catalogue is not None  # the world's catalogue travelled with the set


def test_same_inputs_give_byte_identical_sets_with_any_worker_count(few_world_cases, tmp_path):
    world_cases = few_world_cases
    a, b = tmp_path / "a", tmp_path / "b"
    make_variant_set(
        set_path=world_cases,
        harness_dir=demo_harness_dir(),
        variants=1,
        out=a,
        workers=1,
        seed=5,
        share=1,
    )
    manifest = make_variant_set(
        set_path=world_cases,
        harness_dir=demo_harness_dir(),
        variants=1,
        out=b,
        workers=2,
        seed=5,
        share=1,
    )
    assert manifest["timings"]["workers"] == 2
    assert _tree(a) == _tree(b)
    c = tmp_path / "c"
    make_variant_set(
        set_path=world_cases,
        harness_dir=demo_harness_dir(),
        variants=1,
        out=c,
        workers=1,
        seed=6,
        share=1,
    )
    assert _tree(a)["cases.jsonl"] != _tree(c)["cases.jsonl"]


def test_recorded_trajectories_are_remapped_beside_the_cases(tmp_path, gold_cases, gold_scripts):
    from evaluation.cases import case_request
    from harness.livestream import demo_catalogue
    from harness.policies import ScriptedPolicy
    from harness.runtime import Agent

    lines = []
    for case in gold_cases:
        if case["id"] in gold_scripts:
            with Agent(
                bundle=load_dir(demo_harness_dir()),
                policy=ScriptedPolicy(gold_scripts[case["id"]]),
                catalogue=demo_catalogue(),
                connect_mcp=False,
            ) as agent:
                lines.append(json.dumps(agent.run(case_request(case)).to_dict()))
    recorded = tmp_path / "gold.jsonl"
    recorded.write_text("\n".join(lines) + "\n")
    out = tmp_path / "t2"
    manifest = make_variant_set(
        set_path=DATA / "gold_cases.jsonl",
        harness_dir=demo_harness_dir(),
        variants=2,
        out=out,
        trajectories_path=recorded,
        workers=1,
        share=1,
        verify_replay=True,
    )
    assert manifest["trajectories"] == 10 and manifest["replays_verified"] == 10
    tight = tmp_path / "tight.yaml"
    from harness.augment.envelope import DEFAULT_ENVELOPE

    # a limit the gold labels say nothing about (a minimum comment length) is caught by the replay
    tight.write_text(
        DEFAULT_ENVELOPE.read_text().replace(
            "  params:                           # <hook type>.<numeric param>: range\n",
            "  params:\n    input_validity.min_chars: [90, 100]\n",
        )
    )
    with pytest.raises(VariantSetError, match="input-validity .input. suppress"):
        make_variant_set(
            set_path=DATA / "gold_cases.jsonl",
            harness_dir=demo_harness_dir(),
            variants=1,
            out=tmp_path / "never",
            trajectories_path=recorded,
            workers=1,
            share=1,
            verify_replay=True,
            envelope_path=tight,
            dims=["hooks"],
        )
    assert not (tmp_path / "never").exists()
    bound = {c["id"]: h for c, h in load_variant_set(out)}
    for line in (out / "trajectories.jsonl").read_text().splitlines():
        traj = json.loads(line)
        bundle = load_dir(bound[traj["request_id"]])
        assert all(bundle.tool_registry.get(c["name"]) for c in traj["tool_calls"])
        assert all(s["skill"] in bundle.skills for s in traj["skill_loads"])


def test_cli_builds_the_set_and_reports_unservable_cases(tmp_path, capsys):
    out = tmp_path / "t2"
    assert (
        evaluation_main(
            [
                "make-variant-set",
                "--set",
                str(DATA / "gold_cases.jsonl"),
                "--harness",
                str(demo_harness_dir()),
                "--variants",
                "1",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "6 cases over" in capsys.readouterr().out
    bad = tmp_path / "bad.jsonl"
    case = json.loads((DATA / "gold_cases.jsonl").read_text().splitlines()[0])
    case["gold"]["reply_skills"] = ["size_advisor"]
    bad.write_text(json.dumps(case) + "\n")
    assert (
        evaluation_main(
            [
                "make-variant-set",
                "--set",
                str(bad),
                "--harness",
                str(demo_harness_dir()),
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "case price-3 (line 1): gold.reply_skills names 'size_advisor'" in err
    assert not (tmp_path / "x").exists()
    with pytest.raises(VariantSetError, match="not empty"):
        make_variant_set(
            set_path=DATA / "gold_cases.jsonl", harness_dir=demo_harness_dir(), variants=1, out=out
        )
