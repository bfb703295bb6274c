"""``python -m serving prepare``: after the GGUF export it prefills the Harness's prompt prefix and
saves llama.cpp's state of it, so that a later process's first request restores it; ``--harness
none`` skips that, and a missing Harness folder is one line naming it."""

from __future__ import annotations

from tests.cli import run


def test_prepare_saves_the_harness_prefix_once_for_later_processes(tmp_path):
    env = {"HARNESS_PREFIX_STATES": str(tmp_path / "states")}
    args = ("serving", "prepare", "tiny", "--quantization", "F32")
    first = run(*args, env=env, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "the prompt prefix of Harness livestream-avatar: " in first.stdout
    assert "tokens prefilled and saved" in first.stdout
    assert len(list((tmp_path / "states").glob("*.state"))) == 1
    again = run(*args, env=env, timeout=300)
    assert again.returncode == 0 and "tokens saved already" in again.stdout
    assert len(list((tmp_path / "states").glob("*.state"))) == 1
    skipped = run(*args, "--harness", "none", env={"HARNESS_PREFIX_STATES": str(tmp_path / "x")})
    assert skipped.returncode == 0 and "prompt prefix" not in skipped.stdout
    assert not (tmp_path / "x").exists()


def test_a_harness_that_cannot_be_read_stops_prepare_before_any_work(tmp_path):
    done = run("serving", "prepare", "tiny", "--harness", str(tmp_path / "missing"))
    assert done.returncode == 2
    assert f"{tmp_path / 'missing'}:0: (bundle): not a directory" in done.stderr
    assert "[prepare]" not in done.stdout and "Traceback" not in done.stderr
