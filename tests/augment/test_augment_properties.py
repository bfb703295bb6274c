"""Variants over many seeds: valid, gold-preserving, deterministic, different per family."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import demo_harness_dir, load_mapping, validate_mapping
from harness.augment import DIMS, Requirements, augment_bundle, requirements_from_case
from harness.augment.editable import Body

from .conftest import every_skill_and_tool_cases

SEEDS = st.integers(min_value=0, max_value=2**31 - 1)
DIM_SETS = st.lists(st.sampled_from(DIMS), min_size=1, max_size=5, unique=True)
_SETTINGS = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@_SETTINGS
@given(seed=SEEDS, dims=DIM_SETS)
def test_every_variant_validates(demo_bundle, seed, dims):
    variant = augment_bundle(bundle=demo_bundle, seed=seed, dims=dims)
    assert validate_mapping(variant.bundle.files) == []
    assert variant.mapping.variant_digest == variant.bundle.digest
    json.loads(variant.mapping.to_json())  # JSON all the way down


@_SETTINGS
@given(seed=SEEDS, index=st.integers(0, 13))
def test_gold_skills_and_tools_exist_under_their_mapped_names(demo_bundle, seed, index):
    case = every_skill_and_tool_cases(demo_bundle)[index]
    variant = augment_bundle(
        bundle=demo_bundle, seed=seed, requirements=requirements_from_case(case)
    )
    mapped = variant.mapping.remap_case(case)
    gold = mapped["gold"]
    for skill in gold.get("reply_skills", []) + gold.get("strategy_skills", []):
        assert skill in variant.bundle.skills
    old_kind = next(iter(case["gold"].get("reply_skills") or ["x"]))
    if old_kind != "x":
        assert variant.bundle.skills[gold["reply_skills"][0]].kind == "reply"
    names = {t.name for t in variant.bundle.tools}
    for call, old in zip(gold["tool_calls"], case["gold"]["tool_calls"], strict=True):
        assert call["name"] in names
        # the same implementation behind the new name
        assert (
            variant.bundle.tool_registry.get(call["name"]).binding
            == demo_bundle.tool_registry.get(old["name"]).binding
        )
    assert all(t in names for t in gold["tool_order"])


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=SEEDS)
def test_limits_never_drop_below_what_the_gold_needs(demo_bundle, seed):
    need = Requirements(
        reply_chars=390, rounds=6, tool_calls=11, retries=3, input_chars=1900, prompt_chars=39000
    )
    variant = augment_bundle(bundle=demo_bundle, seed=seed, requirements=need)
    b = variant.bundle
    assert b.prompt.max_rounds >= 6
    assert b.hook_set.retry.max_retries >= 3
    hooks = {h.type: h for h in b.hooks}
    assert hooks["max_tool_calls"].params["max_calls"] >= 11
    assert hooks["input_validity"].params["max_chars"] >= 1900
    assert hooks["context_budget"].params["max_prompt_chars"] >= 58500
    length = hooks["max_length"].params.get("max_chars", b.prompt.max_reply_chars)
    assert length >= 390


@_SETTINGS
@given(seed=SEEDS)
def test_rule_ids_survive_and_essential_rules_are_never_masked(demo_bundle, seed):
    variant = augment_bundle(bundle=demo_bundle, seed=seed, dims=["skill-content"])
    for name, skill in demo_bundle.skills.items():
        new_ids = {r.id for r in variant.bundle.skills[name].rules}
        masked = set(variant.mapping.masked_rules.get(name, []))
        assert new_ids | masked == {r.id for r in skill.rules}
        for rule in skill.rules:
            if rule.id in masked:
                assert not any(ch.isdigit() for ch in rule.text)
                assert not any(t.name in rule.text for t in demo_bundle.tools)
                assert "never" not in rule.text.lower() and "not" not in rule.text.lower().split()


def test_same_seed_gives_byte_identical_bundles_and_mappings(demo_bundle):
    a = augment_bundle(bundle=demo_bundle, seed=1234)
    b = augment_bundle(bundle=demo_bundle, seed=1234)
    assert a.bundle.files == b.bundle.files
    assert a.mapping.to_json() == b.mapping.to_json()


def test_same_seed_is_byte_identical_across_processes_and_hash_seeds(tmp_path):
    outs = []
    for hash_seed in ("1", "999"):
        out = tmp_path / f"v{hash_seed}"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run(
            [
                sys.executable,
                "-m",
                "harness",
                "augment",
                "--harness",
                str(demo_harness_dir()),
                "--seed",
                "77",
                "--out",
                str(out),
                "--quiet",
            ],
            check=True,
            env=env,
            capture_output=True,
        )
        files = {
            p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()
        }
        outs.append((files, (tmp_path / f"v{hash_seed}.mapping.json").read_bytes()))
    assert outs[0] == outs[1]


def _projection(bundle, dim: str):
    """The part of a bundle one family changes."""
    if dim == "skills":
        return tuple(sorted((n, s.description) for n, s in bundle.skills.items()))
    if dim == "skill-content":
        return tuple(
            (s.path, tuple((r.id, r.text) for r in s.rules))
            for s in sorted(bundle.skills.values(), key=lambda s: s.path)
        )
    if dim == "tools":
        return tuple(
            (t.name, t.description, json.dumps(t.parameters, sort_keys=True)) for t in bundle.tools
        )
    if dim == "prompt":
        return bundle.files["prompt.yaml"]
    return bundle.files["hooks.yaml"]


@pytest.mark.parametrize("dims", [list(DIMS)] + [[d] for d in DIMS], ids=lambda d: "+".join(d))
def test_different_seeds_differ_in_every_requested_dimension(demo_bundle, dims):
    seeds = range(100) if len(dims) == len(DIMS) else range(0, 1000, 50)
    seen = {d: set() for d in dims}
    for seed in seeds:
        variant = augment_bundle(bundle=demo_bundle, seed=seed, dims=dims)
        for dim in DIMS:
            got, parent = _projection(variant.bundle, dim), _projection(demo_bundle, dim)
            if dim in dims:
                assert got != parent, f"seed {seed} left {dim} unchanged"
                assert got not in seen[dim], f"seed {seed} repeated an earlier {dim} variant"
                seen[dim].add(got)


@pytest.mark.parametrize(("dim", "files"), [("hooks", {"hooks.yaml"}), ("prompt", {"prompt.yaml"})])
def test_only_the_requested_family_changes(demo_bundle, dim, files):
    for seed in range(5):
        variant = augment_bundle(bundle=demo_bundle, seed=seed, dims=[dim])
        changed = {
            p for p in demo_bundle.files if variant.bundle.files.get(p) != demo_bundle.files[p]
        }
        assert changed == files


def test_skill_content_alone_keeps_names_tools_prompt_and_hooks(demo_bundle):
    variant = augment_bundle(bundle=demo_bundle, seed=9, dims=["skill-content"])
    assert set(variant.bundle.skills) == set(demo_bundle.skills)
    for path in ("tools.yaml", "prompt.yaml", "hooks.yaml", "manifest.yaml"):
        assert variant.bundle.files[path] == demo_bundle.files[path]
    assert variant.mapping.skills == {} and variant.mapping.tools == {}


def test_libyaml_and_python_writers_agree_and_templates_stay_readable(demo_bundle):
    from harness.augment.editable import BlockDumper, dump_text

    for seed in range(5):
        variant = augment_bundle(bundle=demo_bundle, seed=seed)
        for path in ("tools.yaml", "prompt.yaml", "hooks.yaml"):
            text = variant.bundle.files[path]
            assert dump_text(yaml.safe_load(text), dumper=BlockDumper) == text
        assert "  template: |" in variant.bundle.files["prompt.yaml"]


def test_skill_body_round_trip_keeps_rules_and_ids(demo_bundle):
    for skill in demo_bundle.skills.values():
        body = Body.parse(skill.body)
        assert [(r.id, r.text) for r in body.rules()] == [(r.id, r.text) for r in skill.rules]
        files = dict(demo_bundle.files)
        front = skill.path and files[skill.path].split("---")[1]
        files[skill.path] = "---" + front + "---\n" + body.render()
        reloaded = load_mapping(files).skills[skill.name]
        assert [(r.id, r.text) for r in reloaded.rules] == [(r.id, r.text) for r in skill.rules]
