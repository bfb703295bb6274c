"""The validator reports how much of the system prompt every request shares, and warns (never fails)
when request-dependent blocks come before static ones, with what that costs per request."""

from __future__ import annotations

import subprocess
import sys

import yaml

from harness import demo_harness_dir, load_dir
from harness.prompt_sharing import PREFILL_TOK_S, prompt_sharing
from harness.yamlio import load_yaml


def _reordered(bundle, order: list[str]):
    prompt, _lines, _problems = load_yaml(bundle.files["prompt.yaml"], file="prompt.yaml")
    prompt["blocks"] = sorted(prompt["blocks"], key=lambda b: order.index(b["id"]))
    return bundle.with_files(
        {"prompt.yaml": yaml.safe_dump(prompt, sort_keys=False, allow_unicode=True)}
    )


def test_the_demo_harness_shares_its_static_blocks_with_every_request():
    sharing = prompt_sharing(load_dir(demo_harness_dir()))
    assert sharing.request_blocks == ["products", "room", "faq"]
    assert sharing.static_after == [] and sharing.static_after_tokens == 0
    assert 0.7 * sharing.total_tokens < sharing.shared_tokens < sharing.total_tokens
    assert "warning" not in sharing.summary()


def test_static_blocks_after_request_text_are_a_warning_with_their_cost(tmp_path):
    demo = load_dir(demo_harness_dir())
    moved = _reordered(
        demo, ["persona", "boundaries", "products", "room", "faq", "skills", "tools"]
    )
    before, after = prompt_sharing(demo), prompt_sharing(moved)
    assert after.static_after == ["skills", "tools"]
    assert (
        after.shared_tokens < before.shared_tokens - 1000
    )  # skills and tools are no longer shared
    assert after.static_after_tokens > 1000
    assert f"{after.static_after_tokens / PREFILL_TOK_S:.1f} s" in after.summary()
    folder = tmp_path / "moved"
    for name, text in moved.files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "harness", "validate", str(folder)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr  # a warning, not an error
    assert (
        "warning: static block(s) skills, tools come after request-dependent text" in result.stdout
    )


def test_the_change_summary_says_what_a_new_block_order_costs_each_request():
    """The one change summary (harness diff, the studio's diff and draft pages) names the lost
    prefix and its prefill cost per request; an edit that leaves the order alone says nothing about
    it."""
    from harness.diff import summarise

    demo = load_dir(demo_harness_dir())
    moved = _reordered(
        demo, ["persona", "boundaries", "products", "room", "faq", "skills", "tools"]
    )
    after = prompt_sharing(moved)
    lines = summarise(demo, moved)
    assert "prompt blocks reordered" in lines
    shared = next(
        line for line in lines if line.startswith("prompt prefix shared by every request: ")
    )
    assert f"-> {after.shared_tokens:,} of {after.total_tokens:,} tokens" in shared
    warning = next(
        line
        for line in lines
        if line.startswith("warning: static block(s) skills, tools now follow")
    )
    assert f"every request prefills {after.static_after_tokens:,} more tokens" in warning
    back = summarise(moved, demo)  # putting static blocks first again: the prefix grows, no warning
    assert any(line.startswith("prompt prefix shared by every request: ") for line in back)
    assert not any(line.startswith("warning:") for line in back)
    constraint_only = demo.with_files(
        {"prompt.yaml": demo.files["prompt.yaml"].replace("max_rounds: 4", "max_rounds: 5")}
    )
    assert not any("prefix" in line for line in summarise(demo, constraint_only))
