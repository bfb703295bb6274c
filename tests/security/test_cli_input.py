"""Finding 6: bad input to a CLI gives one message naming the file (and line or field), exit 2.

Each test runs the entry point's ``main`` (``python -m harness|evaluation|serving|training``; one
test per command line as a real subprocess, the rest in this process: tests/cli.py) with a file a
user could hand it by mistake (a binary file, JSON nested 100,000 levels deep, JSON cut short, a
field of the wrong type) and checks the exit code, the message and that no traceback is shown. One
test checks the request is validated before the Harness's MCP server starts.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from harness.mcp_registry import TRUST_FLAG
from tests import cli as command_line
from tests.security.test_mcp_registry import hostile_bundle

ROOT = Path(__file__).resolve().parents[2]
REQUEST = ROOT / "examples/requests/faq.json"
SCRIPT = ROOT / "examples/requests/scripts/faq.json"
DEMO = ROOT / "harness/demo/livestream-avatar"

BINARY = b"\x89PNG\r\n\x1a\n" + bytes(range(256))  # an image picked by mistake
DEEP = ("[" * 100_000 + "]" * 100_000).encode()
TRUNCATED = b'{"comments": [\n'


def cli(module: str, *args: str) -> subprocess.CompletedProcess:
    """The command's own ``main`` in this process (tests/cli.py); ``subprocess_cli`` is the real
    ``python -m MODULE``, kept for one test per command line and for the exit code a user sees."""
    return command_line.call(module, *args)


subprocess_cli = command_line.run


def one_error(done: subprocess.CompletedProcess, *fragments: str, code: int = 2) -> str:
    """The exit code, no traceback, and one message holding every fragment."""
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "Traceback" not in done.stdout
    for fragment in fragments:
        assert fragment in done.stderr, (fragment, done.stderr)
    return done.stderr


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


BAD_FILES = {
    "binary": (BINARY, "{path}:1: not UTF-8 text"),
    "deep": (DEEP, "{path}: JSON arrays/objects nest deeper than 64 levels"),
    "truncated": (
        TRUNCATED,
        "{path}:2:1: not valid JSON (Expecting value); the file ends before the JSON is complete",
    ),
}


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
def test_a_bad_request_file_is_one_message_naming_it(tmp_path, kind):
    data, expected = BAD_FILES[kind]
    path = write(tmp_path, "request.json", data)
    err = one_error(
        subprocess_cli("harness", "run", "--request", str(path), "--policy", f"scripted:{SCRIPT}"),
        expected.format(path=path),
    )
    assert len(err.strip().splitlines()) == 1
    assert "0 problem(s)" not in err


@pytest.mark.parametrize("flag", ["--policy", "--catalogue", "--demo-trajectory"])
def test_a_binary_script_catalogue_or_demonstration_is_named(tmp_path, flag):
    path = write(tmp_path, "picked-by-mistake.json", BINARY)
    args = {
        "--policy": ["--policy", f"scripted:{path}"],
        "--catalogue": ["--policy", f"scripted:{SCRIPT}", "--catalogue", str(path)],
        "--demo-trajectory": ["--policy", f"scripted:{SCRIPT}", "--demo-trajectory", str(path)],
    }
    err = one_error(
        cli("harness", "run", "--request", str(REQUEST), *args[flag]), f"{path}:1: not UTF-8 text"
    )
    assert len(err.strip().splitlines()) == 1


def test_a_truncated_catalogue_names_its_line(tmp_path):
    path = write(tmp_path, "catalogue.json", b'{"products": [\n  {"link_id": 1,\n')
    one_error(
        cli(
            "harness",
            "run",
            "--request",
            str(REQUEST),
            "--policy",
            f"scripted:{SCRIPT}",
            "--catalogue",
            str(path),
        ),
        f"{path}:3:1: not valid JSON",
    )


def test_a_wrong_field_is_named_with_what_is_valid(tmp_path):
    request = json.loads(REQUEST.read_text(encoding="utf-8"))
    request["comments"][0]["text"] = 5
    request["colour"] = "red"
    path = write(tmp_path, "request.json", json.dumps(request).encode())
    one_error(
        cli("harness", "run", "--request", str(path), "--policy", f"scripted:{SCRIPT}"),
        f"{path}: comments[0].text: must be a string, got a number",
        f"{path}: colour: unknown field; valid fields are ",
    )


def test_a_script_with_a_wrong_output_names_the_output(tmp_path):
    path = write(tmp_path, "script.json", json.dumps(["hi", {"tool_calls": "load_skill"}]).encode())
    one_error(
        cli("harness", "run", "--request", str(REQUEST), "--policy", f"scripted:{path}"),
        f"{path}: not a policy script: [1].tool_calls: must be a list of {{name, arguments}}",
    )


def test_the_request_is_validated_before_any_mcp_server_starts(tmp_path):
    # The same bundle and flag with a good request do start the server (it writes the
    # marker): tests/security/test_mcp_registry.py, ...only_with_the_trust_flag.
    marker = tmp_path / "server-started"
    bundle_dir = hostile_bundle(tmp_path, marker)
    path = write(tmp_path, "request.json", TRUNCATED)
    one_error(
        cli(
            "harness",
            "run",
            "--harness",
            str(bundle_dir),
            "--request",
            str(path),
            "--policy",
            f"scripted:{SCRIPT}",
            TRUST_FLAG,
        ),
        f"{path}:2:1: not valid JSON",
    )
    assert not marker.exists()


def test_out_in_a_missing_folder_is_refused_before_the_run(tmp_path):
    out = tmp_path / "no-such-folder" / "trajectory.json"
    one_error(
        cli(
            "harness",
            "run",
            "--request",
            str(REQUEST),
            "--policy",
            f"scripted:{SCRIPT}",
            "--out",
            str(out),
        ),
        f"--out {out}: the folder {out.parent} does not exist",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["run", "--max-rounds", "-1"], "argument --max-rounds: '-1': expected an integer >= 1"),
        (["run", "--top-p", "5"], "argument --top-p: '5': expected a number in (0, 1]"),
        (["run", "--budget-s", "nan"], "argument --budget-s: 'nan': expected a number > 0"),
        (
            ["serve-mcp", "--http", "70000"],
            "argument --http: '70000': expected a port number from 1 to 65535",
        ),
    ],
)
def test_out_of_range_flags_say_what_is_valid(args, message):
    extra = (
        ["--request", str(REQUEST), "--policy", f"scripted:{SCRIPT}"] if args[0] == "run" else []
    )
    one_error(cli("harness", *args, *extra), message)


def test_serve_mcp_checks_its_catalogue_before_serving(tmp_path):
    path = write(tmp_path, "catalogue.json", BINARY)
    for module, args in (("harness", ["serve-mcp"]), ("harness.mcp_server", [])):
        one_error(
            subprocess_cli(module, *args, "--catalogue", str(path)), f"{path}:1: not UTF-8 text"
        )


def bad_bundle(tmp_path: Path) -> Path:
    """The demo Harness with a binary tools.yaml and a dangling link among its skills."""
    bundle = Path(shutil.copytree(DEMO, tmp_path / "bundle"))
    (bundle / "tools.yaml").write_bytes(BINARY)
    (bundle / "skills" / "gone.md").symlink_to(tmp_path / "nowhere")
    return bundle


def test_validate_and_diff_name_unreadable_bundle_files(tmp_path):
    bundle = bad_bundle(tmp_path)
    one_error(
        cli("harness", "validate", "--full-paths", str(bundle)), f"{bundle}: 2 problem(s)", code=1
    )
    done = cli("harness", "validate", "--full-paths", str(bundle))
    assert f"{bundle / 'tools.yaml'}:0: (file): not UTF-8 text" in done.stdout
    assert f"{bundle / 'skills/gone.md'}:0: (file): not a regular file" in done.stdout
    one_error(
        cli("harness", "diff", str(DEMO), str(bundle)),
        f"{bundle / 'tools.yaml'}:0: (file): not UTF-8 text",
    )


def test_augment_names_a_bad_case_file(tmp_path):
    path = write(tmp_path, "cases.jsonl", DEEP)
    one_error(
        cli(
            "harness",
            "augment",
            "--harness",
            str(DEMO),
            "--seed",
            "1",
            "--out",
            str(tmp_path / "variant"),
            "--cases",
            str(path),
        ),
        f"error: --cases: {path}:1: JSON arrays/objects nest deeper than 64 levels",
    )
    assert not (tmp_path / "variant").exists()


def test_evaluation_names_unreadable_case_files(tmp_path):
    binary = write(tmp_path, "cases.jsonl", BINARY)
    one_error(
        subprocess_cli("evaluation", "validate", str(binary)), f"error: {binary}:1: not UTF-8 text"
    )
    one_error(
        cli("evaluation", "validate", str(tmp_path / "missing.jsonl")),
        f"{tmp_path / 'missing.jsonl'}: no such case file",
    )
    deep = write(tmp_path, "deep.jsonl", DEEP + b"\n")
    one_error(
        cli("evaluation", "validate", str(deep)),
        f"{deep}:1: <line>: JSON arrays/objects nest deeper than 64 levels",
        code=1,
    )
    one_error(
        cli(
            "evaluation",
            "run",
            "--harness",
            str(DEMO),
            "--set",
            str(binary),
            "--policy",
            f"scripted:{SCRIPT}",
            "--out",
            str(tmp_path / "run"),
        ),
        f"{binary}:1: not UTF-8 text",
    )
    one_error(cli("evaluation", "calibrate", "--set", str(deep)), f"{deep}:1: <line>: JSON")


def test_serving_names_bad_case_and_profile_files(tmp_path):
    binary = write(tmp_path, "cases.jsonl", BINARY)
    one_error(
        subprocess_cli(
            "serving",
            "replay",
            "--route",
            "cpu-tiny",
            "--cases",
            str(binary),
            "--out",
            str(tmp_path / "runs"),
        ),
        f"error: {binary}:1: not UTF-8 text",
    )
    assert not (tmp_path / "runs").exists()
    bomb = write(tmp_path, "profiles.yaml", b"a: &a [x, x]\nb: &b [*a, *a]\nprofiles: [*b, *b]\n")
    err = one_error(cli("serving", "profiles", "--profiles", str(bomb)), f"{bomb}:")
    assert "alias" in err  # refused by harness/yamlio.py, not expanded


def test_training_names_a_binary_config(tmp_path):
    path = write(tmp_path, "sft.yaml", BINARY)
    one_error(
        subprocess_cli("training", "sft", "--config", str(path)),
        f"error: {path}:1: not UTF-8 text (invalid start byte at byte 0); "
        "a config file must be UTF-8 text",
    )


def test_a_missing_model_or_run_folder_is_one_message(tmp_path):
    missing = tmp_path / "no-such-checkpoint"
    one_error(
        cli("harness", "run", "--request", str(REQUEST), "--policy", f"local:{missing}"),
        f"'{missing}' is not a model ({missing} does not exist)",
    )
    one_error(
        cli("training", "eval", "--model", str(missing), "--out", str(tmp_path / "eval")),
        f"error: '{missing}' is not a model",
    )
    one_error(
        cli("evaluation", "compare", str(missing), str(missing)),
        f"error: {missing}: no results file",
    )
    source = write(tmp_path, "ifeval.jsonl", BINARY)
    one_error(
        cli("evaluation", "ifeval", "--policy", "tiny", "--source", str(source), "--limit", "1"),
        f"error: {source}:1: not UTF-8 text",
    )
