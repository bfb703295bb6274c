"""`python -m harness run --policy scripted:...` is deterministic and matches a stored fixture.

The fixture holds the whole trajectory except wall-clock fields. After an
intended change to the demo Harness or the runtime, regenerate it with
``HARNESS_UPDATE_FIXTURES=1 .venv/bin/python -m pytest tests/runtime/test_fixture_trajectory.py``
and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from harness.cli import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "runtime"
REQUEST = ROOT / "examples" / "requests" / "product_price.json"
SCRIPT = FIXTURES / "product_price.script.json"
EXPECTED = FIXTURES / "product_price.trajectory.json"
CLOCK_FIELDS = {"latency_s", "ttft_s", "decode_tokens_per_s", "timings", "digest"}


def without_clock(value):
    if isinstance(value, dict):
        return {k: without_clock(v) for k, v in value.items() if k not in CLOCK_FIELDS}
    if isinstance(value, list):
        return [without_clock(v) for v in value]
    return value


def run_cli(tmp_path: Path, name: str, capsys) -> dict:
    out = tmp_path / name
    code = main(
        [
            "run",
            "--request",
            str(REQUEST),
            "--policy",
            f"scripted:{SCRIPT}",
            "--json",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    printed = json.loads(capsys.readouterr().out)
    saved = json.loads(out.read_text())
    assert printed == saved
    return saved


def test_scripted_run_is_deterministic_and_matches_fixture(tmp_path, capsys):
    first = without_clock(run_cli(tmp_path, "a.json", capsys))
    second = without_clock(run_cli(tmp_path, "b.json", capsys))
    assert first == second
    if os.environ.get("HARNESS_UPDATE_FIXTURES"):
        EXPECTED.write_text(json.dumps(first, indent=2, ensure_ascii=False) + "\n")
    expected = json.loads(EXPECTED.read_text())
    assert first == expected, (
        "trajectory differs from the stored fixture; if the change is "
        "intended, regenerate it (see this module's docstring)"
    )
    assert first["reply"] == "Link 3 is the Sunscreen SPF50, currently 89 yuan."
    assert [t["name"] for t in first["tool_calls"]] == ["get_product_info_by_link_id", "load_skill"]


def test_readable_output_shows_steps(capsys):
    code = main(["run", "--request", str(REQUEST), "--policy", f"scripted:{SCRIPT}"])
    assert code == 0
    out = capsys.readouterr().out
    assert (
        "mcp      marketing: tools calculate_optimal_promotion, "
        "calculate_promotion, get_campaign_conditions" in out
    )
    assert "tool    get_product_info_by_link_id" in out
    assert "skill   item_qa loaded (reply)" in out
    assert "hooks   stop: allow reply-skill-loaded" in out
    assert out.rstrip().endswith("reply    Link 3 is the Sunscreen SPF50, currently 89 yuan.")


def test_cli_reports_bad_request_fields(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"comments": [{"text": "hi"}], "room": {"shelf": [1, 99]}}))
    code = main(["run", "--request", str(bad), "--policy", f"scripted:{SCRIPT}"])
    assert code == 2
    assert (
        f"{bad}: room.shelf[1]: no product with link id 99 in the catalogue"
        in capsys.readouterr().err
    )
