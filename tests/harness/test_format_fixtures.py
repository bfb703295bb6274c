"""The validator against bundles kept on disk: the demo, a minimal bundle and
one broken bundle per kind of mistake, through ``python -m harness``'s own ``main`` (the demo in a
real subprocess, the rest in process: tests/cli.py)."""

from pathlib import Path

import pytest

from harness import demo_harness_dir
from tests import cli

TESTDATA = Path(__file__).parent / "testdata"
BROKEN = sorted(p for p in (TESTDATA / "broken").iterdir() if p.is_dir())


def run_cli(*args):
    return cli.call("harness", *map(str, args))


def test_demo_harness_validates_with_its_summary_line():
    result = cli.run("harness", "validate", str(demo_harness_dir()))
    assert result.returncode == 0, result.stdout + result.stderr
    summary, sharing = result.stdout.strip().splitlines()
    assert (
        summary
        == "livestream-avatar: 14 skills (8 reply, 6 strategy), 11 tools, 7 prompt blocks, 17 hooks"
    )
    assert sharing.startswith("prompt: shared by every request: ") and "warning" not in sharing


def test_there_are_at_least_twelve_kinds_of_mistake():
    assert len(BROKEN) >= 12


@pytest.mark.parametrize("bundle", BROKEN, ids=[p.name for p in BROKEN])
def test_broken_bundle_is_rejected_at_the_file_and_line_of_the_mistake(bundle):
    result = run_cli("validate", bundle)
    assert result.returncode == 1, result.stdout
    reported = sorted(": ".join(line.split(": ")[:2]) for line in result.stdout.splitlines())
    expected = sorted((bundle / ".expected").read_text().split("\n")[:-1])
    assert reported == expected, result.stdout
    for line in result.stdout.splitlines():
        assert len(line.split(": ", 2)[2]) > 10, f"message too vague: {line}"


def test_several_mistakes_are_all_reported_in_one_run(tmp_path):
    import shutil

    shutil.copytree(TESTDATA / "minimal", tmp_path / "b")
    (tmp_path / "b" / "prompt.yaml").write_text(
        (TESTDATA / "broken" / "constraint-out-of-range" / "prompt.yaml").read_text()
    )
    (tmp_path / "b" / "hooks.yaml").write_text(
        (TESTDATA / "broken" / "unknown-hook-type" / "hooks.yaml").read_text()
    )
    result = run_cli("validate", tmp_path / "b")
    assert result.returncode == 1
    assert "prompt.yaml:3: constraints.max_rounds" in result.stdout
    assert "hooks.yaml:4: hooks[0].type" in result.stdout


def test_diff_prints_a_unified_diff_per_changed_file_and_a_summary(tmp_path):
    import shutil

    shutil.copytree(demo_harness_dir(), tmp_path / "b")
    prompt = tmp_path / "b" / "prompt.yaml"
    prompt.write_text(prompt.read_text().replace("max_reply_chars: 220", "max_reply_chars: 160"))
    skill = tmp_path / "b" / "skills" / "greet" / "SKILL.md"
    skill.write_text(skill.read_text().replace("Keep it to one sentence.", "Keep it brief."))
    result = run_cli("diff", "--summary", demo_harness_dir(), tmp_path / "b")
    assert result.returncode == 0
    out = result.stdout
    assert "--- a/prompt.yaml\n+++ b/prompt.yaml" in out
    assert "-  max_reply_chars: 220\n+  max_reply_chars: 160" in out
    assert "--- a/skills/greet/SKILL.md" in out
    assert "# constraint max_reply_chars: 220 -> 160" in out
    assert "# skill greet: rule changed {#short}: Keep it brief." in out
    assert "tools.yaml" not in out
