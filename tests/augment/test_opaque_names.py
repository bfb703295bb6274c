"""Names that carry no meaning (``opaque_name_share``): a renamed tool or skill must be read from
the list the model is shown, not guessed from its words."""

from __future__ import annotations

import re

import pytest

from harness.augment import augment_bundle, parse_envelope
from harness.augment.envelope import DEFAULT_ENVELOPE, EnvelopeError
from harness.augment.names import split_words
from harness.augment.pipeline import opaque_names_envelope


def test_share_zero_leaves_every_variant_as_it_was(demo_bundle):
    for seed in (1, 7, 42):
        before = augment_bundle(bundle=demo_bundle, seed=seed)
        after = augment_bundle(bundle=demo_bundle, seed=seed, envelope=opaque_names_envelope(0.0))
        assert after.bundle.digest == before.bundle.digest
        assert after.mapping.tools == before.mapping.tools


def test_share_one_makes_every_rename_opaque_and_the_mapping_follows(demo_bundle, gold_cases):
    variant = augment_bundle(bundle=demo_bundle, seed=3, envelope=opaque_names_envelope(1.0))
    assert variant.mapping.tools and variant.mapping.skills
    for old, new in {**variant.mapping.tools, **variant.mapping.skills}.items():
        assert re.fullmatch(r"[a-z]{1,2}_?[a-z0-9]{1,6}", new), new
        assert not set(split_words(new)) & set(split_words(old)), (old, new)
    assert {t.name for t in variant.bundle.tools} >= set(variant.mapping.tools.values())
    # a gold label follows an opaque rename like any other
    case = next(c for c in gold_cases if c["gold"].get("tool_calls"))
    remapped = variant.mapping.remap_case(case)
    for call, new_call in zip(
        case["gold"]["tool_calls"], remapped["gold"]["tool_calls"], strict=True
    ):
        assert new_call["name"] == variant.mapping.tools.get(call["name"], call["name"])


def test_a_share_of_renames_is_opaque(demo_bundle):
    opaque = total = 0
    for seed in range(20):
        plain = augment_bundle(bundle=demo_bundle, seed=seed, dims=["tools"])
        variant = augment_bundle(
            bundle=demo_bundle, seed=seed, dims=["tools"], envelope=opaque_names_envelope(0.3)
        )
        assert variant.mapping.tools.keys() == plain.mapping.tools.keys()  # the same tools renamed
        for old, new in variant.mapping.tools.items():
            total += 1
            opaque += new != plain.mapping.tools[old]
    assert 0.15 < opaque / total < 0.45, (opaque, total)


def test_the_envelope_takes_the_share_and_names_a_wrong_one():
    text = DEFAULT_ENVELOPE.read_text()
    env = parse_envelope(
        text.replace("  reorder: true ", "  opaque_name_share: 0.4\n  reorder: true ", 1)
    )
    assert env.tools["opaque_name_share"] == 0.4
    with pytest.raises(EnvelopeError, match=r"tools\.opaque_name_share"):
        parse_envelope(
            text.replace("  reorder: true ", "  opaque_name_share: 1.5\n  reorder: true ", 1),
            file="env.yaml",
        )
