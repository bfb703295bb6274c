"""Build item 5: the CLI entry points, fuzzed with random bytes and random JSON.

Each example writes one input file (a ``--request``, a ``scripted:`` script, a
``--catalogue``, a ``--demo-trajectory``, or one file of a bundle for
``validate``/``diff``) and calls ``harness.cli.main`` in-process, as
``python -m harness`` does. Whatever the file holds, the command ends with a
documented exit code (0 ran, 1 ``validate`` found problems, 2 bad input)
and a bad input is named in the message; an uncaught exception fails the test.
The Harness is tests/harness/testdata/minimal (no MCP server), so an input that
happens to be valid runs in milliseconds.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
REQUEST = ROOT / "examples/requests/faq.json"
SCRIPT = ROOT / "examples/requests/scripts/faq.json"
MINIMAL = ROOT / "tests/harness/testdata/minimal"
DEMO = ROOT / "harness/demo/livestream-avatar"

FUZZ = settings(
    max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)

scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=25,
)
# Values that get past the first checks: the request's own fields and comment shapes.
comment = st.fixed_dictionaries(
    {"user": json_values | st.text(max_size=8), "text": json_values | st.text(max_size=40)}
)
request_like = st.dictionaries(
    st.sampled_from(
        [
            "id",
            "mode",
            "comments",
            "room",
            "history",
            "anchor_utterances",
            "products",
            "catalogue",
            "faq",
            "locale",
            "intent",
            "extra",
        ]
    ),
    st.lists(comment, max_size=3) | json_values,
    max_size=8,
)
catalogue_like = st.dictionaries(
    st.sampled_from(["products", "promotions", "faq", "campaigns"]),
    st.lists(
        st.dictionaries(
            st.sampled_from(
                ["link_id", "product_id", "name", "price", "stock", "id", "kind", "title"]
            ),
            json_values,
            max_size=5,
        ),
        max_size=3,
    )
    | json_values,
    max_size=4,
)
script_like = st.lists(
    st.text(max_size=30)
    | st.dictionaries(
        st.sampled_from(["text", "tool_calls", "raise", "other"]),
        st.text(max_size=20)
        | st.lists(
            st.dictionaries(st.sampled_from(["name", "arguments", "id"]), json_values, max_size=3),
            max_size=2,
        )
        | json_values,
        max_size=3,
    ),
    max_size=4,
)


def as_json(strategy) -> st.SearchStrategy[bytes]:
    return strategy.map(lambda v: json.dumps(v).encode())


nested = st.integers(min_value=60, max_value=5000).map(lambda n: ("[" * n + "]" * n).encode())
cut_short = st.tuples(as_json(request_like), st.integers(min_value=0)).map(
    lambda pair: pair[0][: pair[1] % max(1, len(pair[0]))]
)


def contents(shaped) -> st.SearchStrategy[bytes]:
    return st.one_of(
        st.binary(max_size=300), as_json(json_values), as_json(shaped), nested, cut_short
    )


def run_main(argv: list[str]) -> tuple[int, str]:
    """Exit code and stderr of ``python -m harness ARGV``, in-process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code
    return code, err.getvalue()


def check(name: str, data: bytes, *, flag: str) -> None:
    """Run ``harness run`` with ``data`` as the file given to ``flag``."""
    with tempfile.TemporaryDirectory(prefix="cli-fuzz-") as tmp:
        path = Path(tmp) / name
        path.write_bytes(data)
        argv = [
            "run",
            "--harness",
            str(MINIMAL),
            "--request",
            str(REQUEST),
            "--policy",
            f"scripted:{SCRIPT}",
        ]
        if flag == "--policy":
            argv[argv.index(flag) + 1] = f"scripted:{path}"
        elif flag == "--request":
            argv[argv.index(flag) + 1] = str(path)
        else:
            argv += [flag, str(path)]
        code, err = run_main(argv)
    assert code in (0, 2), (code, err)
    if code == 2:
        assert str(path) in err, err


@FUZZ
@given(data=contents(request_like))
def test_run_with_any_request_file(data):
    check("request.json", data, flag="--request")


@FUZZ
@given(data=contents(script_like))
def test_run_with_any_scripted_policy_file(data):
    check("script.json", data, flag="--policy")


@FUZZ
@given(data=contents(catalogue_like))
def test_run_with_any_catalogue_file(data):
    check("catalogue.json", data, flag="--catalogue")


@FUZZ
@given(
    data=contents(
        st.fixed_dictionaries(
            {
                "model_calls": st.lists(
                    st.dictionaries(
                        st.sampled_from(["text", "messages", "error"]), json_values, max_size=3
                    ),
                    max_size=3,
                )
            }
        )
    )
)
def test_run_with_any_demonstration_file(data):
    check("demo.json", data, flag="--demo-trajectory")


BUNDLE_FILES = [
    "manifest.yaml",
    "tools.yaml",
    "prompt.yaml",
    "hooks.yaml",
    "skills/faq_reply/SKILL.md",
    "README.md",
    "skills/x/SKILL.md",
    "notes.txt",
]
yaml_like = st.lists(
    st.sampled_from(
        [
            "a: 1",
            "- x",
            "  b: [1, 2",
            "&a x",
            "*a",
            "---",
            "{",
            "'",
            "tools:",
            "  - name: x",
            "key: &k v",
            "<<: *k",
            "\t",
            "",
        ]
    ),
    max_size=8,
).map(lambda lines: "\n".join(lines).encode())


@settings(FUZZ, max_examples=25)  # each example copies and parses a whole bundle twice
@given(
    rel=st.sampled_from(BUNDLE_FILES),
    data=st.one_of(st.binary(max_size=300), yaml_like, st.text(max_size=200).map(str.encode)),
)
def test_validate_and_diff_with_any_bundle_file(rel, data):
    bundle = Path(tempfile.mkdtemp(prefix="cli-fuzz-")) / "bundle"
    shutil.copytree(DEMO, bundle)
    (bundle / rel).parent.mkdir(parents=True, exist_ok=True)
    (bundle / rel).write_bytes(data)
    code, err = run_main(["validate", str(bundle)])
    assert code in (0, 1), (code, err)
    code, err = run_main(["diff", str(DEMO), str(bundle)])
    assert code in (0, 2), (code, err)
    shutil.rmtree(bundle.parent)


case_like = st.dictionaries(
    st.sampled_from(
        [
            "format",
            "id",
            "set",
            "category",
            "comments",
            "gold",
            "room",
            "candidates",
            "constraints",
            "extra_tools",
            "tags",
        ]
    ),
    st.sampled_from(["hs-case/1", "faq", "x"]) | st.lists(comment, max_size=2) | json_values,
    max_size=8,
)


@FUZZ
@given(lines=st.lists(st.one_of(st.binary(max_size=80), as_json(case_like), nested), max_size=4))
def test_evaluation_validate_with_any_case_file(lines):
    from evaluation.__main__ import main as evaluation_main

    with tempfile.TemporaryDirectory(prefix="cli-fuzz-") as tmp:
        path = Path(tmp) / "cases.jsonl"
        path.write_bytes(b"\n".join(lines))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = evaluation_main(["validate", str(path)])
    assert code in (0, 1, 2), (code, err.getvalue())  # valid, bad lines, unreadable
    if code:
        assert str(path) in err.getvalue()
