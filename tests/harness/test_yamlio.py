"""The one YAML reader's syntax errors point at the line of the mistake (issue 29, item 9)."""

import pytest

from harness.yamlio import load_yaml


@pytest.mark.parametrize(
    ("text", "line", "noticed"),
    [
        (
            "tools:\n  - name: a\n    description x\n    timeout_s: 3\n",
            3,
            4,
        ),  # a key without its ':'
        ("a: 1\nb: [1, 2\nc: 3\n", 2, 3),  # a bracket never closed
        ('a: 1\nb: "abc\nc: 3\nd: 4\n', 2, 5),  # a quote never closed
    ],
)
def test_a_mistake_is_marked_on_its_own_line_not_where_the_parser_gave_up(text, line, noticed):
    _data, _lines, problems = load_yaml(text, file="x.yaml")
    assert [p.line for p in problems] == [line]
    assert f"noticed at line {noticed}" in problems[0].message


def test_a_mistake_found_on_its_own_line_is_marked_there():
    _data, _lines, problems = load_yaml(
        "a: 1\n  b: 2\nc: 3\n", file="x.yaml"
    )  # indented under a scalar
    assert [p.line for p in problems] == [2] and "noticed" not in problems[0].message


def test_yaml_already_checked_is_read_under_the_same_bounds():
    """``yaml_data`` (the augmentation's and the T3 sets' reading of a loaded bundle's files) is
    ``load_yaml``'s data; what ``load_yaml`` would report is raised, naming file and line, never a
    value the library alone would have read (the last of two keys, an alias expanded)."""
    from harness.errors import HarnessValidationError
    from harness.yamlio import yaml_data

    assert yaml_data("a: 1\nb: [x, y]\n", file="tools.yaml") == {"a": 1, "b": ["x", "y"]}
    with pytest.raises(HarnessValidationError, match=r"tools.yaml:2: a: duplicate key 'a'"):
        yaml_data("a: 1\na: 2\n", file="tools.yaml")
    with pytest.raises(HarnessValidationError, match=r"SKILL.md:3: \(refused\): YAML anchors"):
        yaml_data("x: &v 1\ny: *v\n", file="SKILL.md", line_offset=2)
