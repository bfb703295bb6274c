"""Property-based: random text into every parser raises nothing but problems."""

import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness import Problem, demo_harness_dir, read_dir, validate_mapping
from harness.hooks import parse_hooks
from harness.prompt import parse_prompt
from harness.skills import parse_skill
from harness.tools import parse_tools
from harness.yamlio import load_yaml

DEMO, _ = read_dir(demo_harness_dir())
YAMLISH = st.text(alphabet=string.printable + "ü—{}[]:-#&*!|>'\"%@`", max_size=400)
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _only_problems(result):
    value, problems = result
    assert all(isinstance(p, Problem) for p in problems)
    assert (value is None) == bool(problems)


@FUZZ
@given(YAMLISH)
def test_yaml_reader(text):
    _data, _lines, problems = load_yaml(text, file="x.yaml")
    assert all(isinstance(p, Problem) for p in problems)


@FUZZ
@given(YAMLISH)
def test_tools_parser(text):
    _only_problems(parse_tools(text))


@FUZZ
@given(YAMLISH)
def test_prompt_parser(text):
    _only_problems(parse_prompt(text))


@FUZZ
@given(YAMLISH)
def test_hooks_parser(text):
    _only_problems(parse_hooks(text))


@FUZZ
@given(st.one_of(YAMLISH, YAMLISH.map(lambda t: "---\n" + t + "\n---\n- rule {#x}\n")))
def test_skill_parser(text):
    _only_problems(parse_skill(text, path="skills/x/SKILL.md"))


@FUZZ
@given(st.sampled_from(sorted(DEMO)), st.integers(min_value=0, max_value=5000), YAMLISH)
def test_demo_with_random_text_spliced_into_one_file(path, at, junk):
    files = dict(DEMO)
    text = files[path]
    at = at % (len(text) + 1)
    files[path] = text[:at] + junk + text[at:]
    problems = validate_mapping(files)
    assert all(isinstance(p, Problem) and p.file for p in problems)


@FUZZ
@given(st.dictionaries(st.text(max_size=30), st.text(max_size=50), max_size=6))
def test_arbitrary_mappings(files):
    problems = validate_mapping(files)
    assert problems and all(isinstance(p, Problem) for p in problems)
