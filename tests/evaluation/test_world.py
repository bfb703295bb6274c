"""The synthetic world: deterministic, at the sizes and mix of docs/architecture.md §6, varied,
labelled with real names."""

import json

import pytest

from evaluation.cases import load_cases
from evaluation.world import names as N
from evaluation.world.sets import INTENT_MIX, SET_SIZES, generate


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("world")
    manifest = generate(out=out / "a", seed=11)
    return out, manifest


def test_same_seed_gives_byte_identical_files_and_another_seed_differs(generated):
    import os
    import subprocess
    import sys
    from pathlib import Path

    out, _ = generated
    # another process with another hash seed: nothing may depend on set or dict order
    printed = subprocess.run(
        [sys.executable, "-m", "evaluation", "generate", "--out", str(out / "b"), "--seed", "11"],
        check=True,
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONHASHSEED": "123"},
    ).stdout
    for name, size in SET_SIZES.items():  # the CLI prints every set it wrote
        assert f"{name}.jsonl" in printed and f"{size} cases" in printed, printed
    generate(out=out / "c", seed=12)
    names = sorted(p.name for p in (out / "a").iterdir())
    assert names == sorted(
        [
            "catalogue.json",
            "manifest.json",
            "dev.jsonl",
            "live_qa.jsonl",
            "tool_robustness.jsonl",
            "prompt_robustness.jsonl",
            "replay.jsonl",
        ]
    )
    for name in names:
        assert (out / "a" / name).read_bytes() == (out / "b" / name).read_bytes(), name
    assert (out / "a" / "dev.jsonl").read_bytes() != (out / "c" / "dev.jsonl").read_bytes()


def test_sets_have_the_report_sizes_and_load_as_valid_case_files(generated):
    out, manifest = generated
    for name, size in SET_SIZES.items():
        cases = load_cases(out / "a" / f"{name}.jsonl")
        assert len(cases) == size == manifest["sets"][name]["cases"]
    replay = load_cases(out / "a" / "replay.jsonl")
    assert sum(c["replay"]["warmup"] for c in replay) == 10


def test_catalogue_is_big_enough():
    from evaluation.world.catalogue import build_catalogue
    from harness.livestream.catalogue import Catalogue  # the runtime's own reader

    cat = Catalogue.from_dict(build_catalogue(seed=3).to_dict())
    assert len(cat.products) >= 60
    assert len({p.category for p in cat.products}) >= 6
    assert any(p.stock == 0 for p in cat.products) and any(p.promotion_ids for p in cat.products)
    assert all(p.specs for p in cat.products) and cat.all_faq()


def test_dev_set_intent_mix_is_within_two_points_of_spec(generated):
    _, manifest = generated
    mix = manifest["sets"]["dev"]["category_mix_percent"]
    for category, target in INTENT_MIX.items():
        assert abs(mix[category] - target) <= 2.0, (category, mix[category], target)


def test_dev_set_has_multi_comment_silent_cases_and_every_defect(generated):
    out, manifest = generated
    dev = load_cases(out / "a" / "dev.jsonl")
    assert manifest["sets"]["dev"]["multi_comment"] >= 40
    silent = [c for c in dev if c["gold"]["route"] == "silent"]
    assert silent and all(c["category"] == "silent_refusal" for c in silent)
    injected = [
        c
        for c in dev
        if c["mode"] == "multi"
        and any(f["id"] == "followed_injection" for f in c["gold"]["forbidden_claims"])
    ]
    assert injected, "multi-comment cases should mix in injections to be ignored"
    defects = manifest["sets"]["dev"]["candidate_defects"]
    for d in (
        "wrong_price",
        "invented_discount",
        "missing_fact",
        "vague",
        "over_long",
        "wrong_language",
        "refused_legit",
        "good",
    ):
        assert defects.get(d, 0) >= 10, (d, defects)


def test_wording_is_varied_not_a_handful_of_templates(generated):
    _, manifest = generated
    for name in ("dev", "live_qa", "tool_robustness", "prompt_robustness"):
        variety = manifest["sets"][name]["variety"]
        assert variety["unique_share"] >= 0.8, (name, variety)
        assert variety["distinct_2"] >= 0.15, (name, variety)


def test_gold_names_exist_in_the_demo_harness(generated):
    from harness import demo_harness_dir, load_dir

    bundle = load_dir(demo_harness_dir())
    tools = {t.name for t in bundle.tools}
    assert set(N.TOOLS) <= tools and set(N.REPLY_SKILLS + N.STRATEGY_SKILLS) <= set(bundle.skills)
    out, _ = generated
    for name in ("dev", "live_qa", "prompt_robustness"):
        for case in load_cases(out / "a" / f"{name}.jsonl"):
            gold = case["gold"]
            assert set(gold["reply_skills"]) <= set(bundle.skills)
            assert set(gold["strategy_skills"]) <= set(bundle.skills)
            assert {c["name"] for c in gold["tool_calls"]} <= tools


def test_tool_and_prompt_robustness_cases_carry_their_rubrics(generated):
    out, _ = generated
    tool = load_cases(out / "a" / "tool_robustness.jsonl")
    assert all(c["gold"]["rubrics"] == ["ACQ", "RC", "TC"] and c["extra_tools"] for c in tool)
    unseen = [c for c in tool if "unseen_tool" in c["tags"]]
    assert len(unseen) >= 100
    for case in unseen:
        names = {t["name"] for t in case["extra_tools"] if not t["distractor"]}
        assert {c["name"] for c in case["gold"]["tool_calls"]} == names
    prompt = load_cases(out / "a" / "prompt_robustness.jsonl")
    assert all(c["gold"]["rubrics"] == ["ACQ", "FI", "TCO"] and c["constraints"] for c in prompt)
    ordered = [c for c in prompt if c["gold"]["tool_order"]]
    assert ordered and all(c["gold"]["tool_order"][0] == N.ROOM_STATUS for c in ordered)
    manifest = json.loads((out / "a" / "manifest.json").read_text())
    assert manifest["seed"] == 11


def test_every_reference_reply_passes_the_programmatic_judge(generated):
    """The gold reply of every case is correct and complete by the judge's own rules."""
    from evaluation.judges import ProgrammaticJudge
    from harness.livestream.catalogue import Catalogue

    out, _ = generated
    judge = ProgrammaticJudge(catalogue=Catalogue.load(out / "a" / "catalogue.json"))
    for name in SET_SIZES:
        for case in load_cases(out / "a" / f"{name}.jsonl"):
            gold = case["gold"]
            # the tools an ideal agent would call, answering with the case's canned results
            canned = {t["name"]: t.get("result") for t in case.get("extra_tools", [])}
            trajectory = {
                "outcome": "replied",
                "skill_loads": [],
                "tool_calls": [
                    {
                        "name": c["name"],
                        "arguments": c["arguments"],
                        "result": canned.get(c["name"]),
                    }
                    for c in gold["tool_calls"]
                ],
            }
            route = "silent" if gold["route"] == "silent" else "public"
            verdict = judge.judge(
                case=case, reply=gold["reference_reply"], route=route, trajectory=trajectory
            )
            assert (verdict.accuracy, verdict.effectiveness) == (1, 1.0), (
                case["id"],
                verdict.reasons,
            )
            for rubric in ("ACQ", "RC", "FI", "TC"):
                assert verdict.rubrics.get(rubric, True), (case["id"], rubric, verdict.reasons)


def test_no_set_hands_the_model_its_answer_in_the_products_listed(generated):
    """Every set lists its gold products among the product on screen and distractors, shuffled,
    and at least a third of the product questions ask about a link other than the one on screen
    (a model that looks up the first or the on-screen product must be wrong on those)."""
    from evaluation.judges.evidence import gold_links
    from harness.livestream.catalogue import Catalogue

    out, _ = generated
    catalogue = Catalogue.load(out / "a" / "catalogue.json")
    for name in SET_SIZES:
        cases = load_cases(out / "a" / f"{name}.jsonl")
        with_gold = [(c, gold_links(c, catalogue)) for c in cases]
        with_gold = [(c, g) for c, g in with_gold if g]
        assert with_gold, name
        for case, gold in with_gold:
            assert gold <= set(case["products"]), (case["id"], gold, case["products"])
            assert len(case["products"]) > len(gold), (case["id"], "only the gold is listed")
        first_is_gold = sum(1 for c, g in with_gold if c["products"][0] in g)
        assert first_is_gold < 0.75 * len(with_gold), (name, first_is_gold, len(with_gold))
        questions = [(c, g) for c, g in with_gold if c["category"] == "product_qa"]
        elsewhere = [c for c, g in questions if c["room"]["current_link_id"] not in g]
        assert len(elsewhere) >= len(questions) / 3, (name, len(elsewhere), len(questions))
