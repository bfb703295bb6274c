"""The change envelope: the shipped file loads; every mistake is named with its line."""

from __future__ import annotations

import pytest

from harness.augment import EnvelopeError, load_envelope, parse_envelope
from harness.augment.envelope import DEFAULT_ENVELOPE
from harness.hook_catalogue import HOOK_TYPES


def test_shipped_envelope_loads_and_covers_every_catalogue_envelope():
    env = load_envelope()
    assert env.constraint_range("max_rounds") == (4, 6)
    for name, htype in HOOK_TYPES.items():
        for param in htype.envelope:
            assert env.hook_param_range(name, param) is not None, f"{name}.{param}"


def _edited(old: str, new: str) -> str:
    text = DEFAULT_ENVELOPE.read_text()
    assert old in text
    return text.replace(old, new)


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        (
            "max_rounds: [4, 6]",
            "max_rounds: [6, 4]",
            "prompt.constraints.max_rounds",
            "not a range",
        ),
        (
            "max_rounds: [4, 6]",
            "max_rounds: [4, 60]",
            "prompt.constraints.max_rounds",
            "valid range",
        ),
        (
            "max_rounds: [4, 6]",
            "max_turns: [4, 6]",
            "prompt.constraints.max_turns",
            "unknown constraint",
        ),
        (
            "max_tool_calls.max_calls: [6, 12]",
            "max_tool_calls.block_repeats: [0, 1]",
            "hooks.params.max_tool_calls.block_repeats",
            "not a numeric hook parameter",
        ),
        (
            "rename_probability: 0.85          # each skill",
            "rename_probability: 1.5 #",
            "skills.rename_probability",
            "out of range",
        ),
        (
            "on_exhausted: [fallback, suppress]",
            "on_exhausted: [fallback, explode]",
            "hooks.on_exhausted[1]",
            "explode",
        ),
    ],
)
def test_bad_envelope_names_file_line_and_field(old, new, field, words):
    text = _edited(old, new)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if new.split("#")[0].strip() in t)
    with pytest.raises(EnvelopeError) as info:
        parse_envelope(text, file="my-envelope.yaml")
    problems = info.value.problems
    assert any(
        p.file == "my-envelope.yaml" and p.field == field and words in p.message and p.line == line
        for p in problems
    ), problems


def test_missing_file_is_reported(tmp_path):
    with pytest.raises(EnvelopeError, match="no such change envelope"):
        load_envelope(tmp_path / "nope.yaml")
