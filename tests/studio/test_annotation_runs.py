"""Replies of finished evaluation run folders become labelling items, through
``manage.py annotation_add_run``: every reply with its case (gold kept, the generator's labels
dropped), route, full trajectory and origin; the same case from two runs is two items."""

from __future__ import annotations

import json
import shutil

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evaluation.runner import run_set
from harness import demo_harness_dir
from studio.annotation.models import AnnotationQueue
from tests import artefacts

pytestmark = pytest.mark.django_db

LOAD = '<tool_call>{"name": "load_skill", "arguments": {"name": "%s"}}</tool_call>'
SCRIPTS = {
    "chat": [
        {"text": LOAD % "chillchat"},
        {"text": "Thanks for watching, happy to help!"},
    ],
    "price": [
        {"text": LOAD % "item_qa"},
        {"text": "Link 1 is 99 yuan today."},
    ],
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two finished run folders over the same three dev cases, one per scripted policy."""
    world = artefacts.world(tmp_path_factory, 21)
    base = tmp_path_factory.mktemp("runs")
    folders = {}
    for name, steps in SCRIPTS.items():
        script = base / f"{name}.json"
        script.write_text(json.dumps(steps))
        folders[name] = base / f"dev-{name}"
        run_set(
            harness_dir=demo_harness_dir(),
            set_path=world / "dev.jsonl",
            policy=f"scripted:{script}",
            out=folders[name],
            limit=3,
            progress=False,
        )
    return world, folders


def _add(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("annotation_add_run", *args, stdout=out)
    return out.getvalue()


def test_every_reply_of_two_runs_becomes_an_item_with_its_origin(runs):
    world, folders = runs
    printed = _add(
        "--queue", "calib", "--run", str(folders["chat"]), "--run", str(folders["price"])
    )
    assert "run dev-chat (scripted:" in printed and "3 replies added" in printed
    assert "queue calib: 6 item(s)" in printed
    queue = AnnotationQueue.objects.get(name="calib")
    items = list(queue.items.order_by("position"))
    assert len({i.case_id for i in items}) == 6
    dev = {c["id"]: c for c in map(json.loads, (world / "dev.jsonl").read_text().splitlines())}
    results = {
        name: list(map(json.loads, (folder / "results.jsonl").read_text().splitlines()))
        for name, folder in folders.items()
    }
    for item in items:
        own_id, run = item.case_id.split("@")
        source = results[run.removeprefix("dev-")]
        row = next(r for r in source if r["id"] == own_id)
        assert item.case["gold"] == dev[own_id]["gold"] and item.case["id"] == item.case_id
        assert "candidates" not in item.case  # generated "human" labels never reach a labeller
        assert item.reply == row["reply"] and item.route == row["route"]
        assert item.trajectory == row["trajectory"] and item.trajectory["model_calls"]
        assert item.provenance["run"] == run and item.provenance["case_id"] == own_id
        assert item.provenance["policy"].startswith("scripted:")
        assert item.provenance["harness"] == "livestream-avatar"
        assert item.origin.startswith(f"run {run} (scripted:")

    again = _add("--queue", "calib", "--run", str(folders["chat"]))
    assert "0 replies added, 3 in the queue already" in again


def test_an_unfinished_or_unknown_folder_is_refused_before_anything_is_written(runs, tmp_path):
    _, folders = runs
    unfinished = tmp_path / "dev-half"
    shutil.copytree(folders["chat"], unfinished)
    (unfinished / "report.json").unlink()
    with pytest.raises(CommandError, match="not finished"):
        _add("--queue", "q", "--run", str(folders["chat"]), "--run", str(unfinished))
    with pytest.raises(CommandError, match="no run.json"):
        _add("--queue", "q", "--run", str(tmp_path))
    assert not AnnotationQueue.objects.filter(name="q").exists()
    twin = tmp_path / "dev-chat"
    shutil.copytree(folders["price"], twin)
    with pytest.raises(CommandError, match="two folders are named 'dev-chat'"):
        _add("--queue", "q", "--run", str(folders["chat"]), "--run", str(twin))
