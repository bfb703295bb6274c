"""Calibration only on labels people wrote (issue 50 finding 3, issue 48 item 1): an export of an
annotation queue is a calibration file that keeps every label's labeller and time, the queue item
and origin, the labellers' kappa and a dev / held-out split made once by case digest; the committed
file is what ``python -m evaluation calibrate`` reads and the studio's gate prefers; an imported or
generated set, a sample that cannot decide and a judge typed as a URL are refused; an admin retires
a calibration."""

from __future__ import annotations

import json
import math
from io import StringIO

import pytest
from django.core.management import call_command
from studio_testing import client_for, page_text

from evaluation.calibration import parse_calibration_text
from evaluation.cases import CATEGORIES
from studio.accounts.roles import ANNOTATOR
from studio.accounts.services import user_create
from studio.annotation.models import AnnotationQueue, JudgeCalibration, LabelSet
from studio.annotation.selectors import judge_standing
from studio.annotation.services import queue_add_dataset, queue_create
from studio.evolution.services.datasets import dataset_import
from studio.traffic.testing import world_cases
from tests.cli import run

pytestmark = pytest.mark.django_db
PER_CATEGORY = 2


@pytest.fixture(scope="module")
def world():
    dev, catalogue = world_cases(10_000, seed=7)  # the whole dev-set
    picked = []
    for category in CATEGORIES:
        picked += [c for c in dev if c["category"] == category][:PER_CATEGORY]
    return picked, catalogue


@pytest.fixture
def small_minimum(settings, tmp_path):
    settings.CALIBRATION_MIN_REPLIES = len(CATEGORIES) * PER_CATEGORY
    settings.JUDGE_CALIBRATION_FILE = tmp_path / "calibration" / "human.jsonl"
    return settings


@pytest.fixture
def labelled_queue(world, personas, small_minimum):
    """Every reply labelled by the reviewer as the generator's defect says, a third of them also by
    an annotator (who disagrees on one Effectiveness, settled by the admin)."""
    cases, catalogue = world
    replies = dataset_import(
        name="world-replies",
        text="\n".join(json.dumps(c) for c in cases),
        source="replies.jsonl",
        actor=personas.admin,
        catalogue=catalogue.to_dict(),
    )
    queue = queue_create(name="calib", actor=personas.reviewer)
    queue_add_dataset(queue=queue, dataset=replies, actor=personas.reviewer)
    lena = user_create(username="lena", password="correct horse battery staple", roles=[ANNOTATOR])
    people = {"reviewer": client_for(personas.reviewer), "lena": client_for(lena)}
    for item, case in zip(queue.items.order_by("position"), cases, strict=True):
        human = case["candidates"][0]["human"]
        label = {
            "accuracy": str(human["accuracy"]),
            "effectiveness": f"{human['effectiveness']:g}",
            "category": case["category"],
            "route": case["gold"]["route"],
            "reply_skills": "",
            "tools": "",
            "note": "",
        }
        path = f"/annotation/q/calib/items/{item.position}/"
        assert people["reviewer"].post(path, label).status_code == 302
        if item.position % 3 == 0:
            second = dict(label)
            if item.position == 3:
                second["effectiveness"] = "0.5" if label["effectiveness"] != "0.5" else "1"
            assert people["lena"].post(path, second).status_code == 302
    third = client_for(personas.admin)
    first = queue.items.get(position=3).labels.first()
    settled = {
        "accuracy": str(first.accuracy),
        "effectiveness": f"{first.effectiveness:g}",
        "category": first.category,
        "route": first.route,
        "reply_skills": "",
        "tools": "",
        "note": "",
    }
    assert third.post("/annotation/q/calib/items/3/", settled).status_code == 302
    return queue, cases


def test_an_export_is_a_calibration_file_with_provenance_kappa_and_a_stable_split(
    labelled_queue, personas
):
    queue, cases = labelled_queue
    reviewer = client_for(personas.reviewer)
    assert reviewer.post("/annotation/q/calib/export/").status_code == 302
    download = reviewer.get("/annotation/q/calib/exports/1/calibration.jsonl")
    assert download.status_code == 200
    assert 'filename="calib-v1.jsonl"' in download["Content-Disposition"]
    parsed = parse_calibration_text(download.content.decode())
    header, rows = parsed.header, parsed.rows
    assert header["format"] == "hs-calibration/1" and header["version"] == 1
    assert header["replies"] == len(cases) and header["exported_by"] == "rafael"
    assert header["parts"]["heldout"] >= math.ceil(len(cases) / 3)
    assert header["parts"]["dev"] + header["parts"]["heldout"] == len(cases)
    twice = [r for r in rows if len(r["labels"]) >= 2]
    assert len(twice) == len(cases) // 3  # a third labelled twice, kappa computed on the export
    between = header["labeller_agreement"]
    assert between["n"] == len(twice) and between["effectiveness"]["agreement"] < 1.0
    assert len(between["accuracy"]["kappa_interval"]) == 2
    disputed = next(r for r in rows if r["origin"]["item"] == 3)
    assert [lb["labeller"] for lb in disputed["labels"]] == ["rafael", "lena", "ada"]
    assert all(lb["labelled_at"] for lb in disputed["labels"])
    assert disputed["origin"]["queue"] == "calib" and disputed["origin"]["kind"] == "dataset"
    assert "candidates" in disputed["case"] and disputed["case"]["candidates"][0]["human"]
    parts = {r["digest"]: r["part"] for r in rows}

    # a later export keeps every earlier part (split once), and the committed file is the same
    out = _file()
    printed = StringIO()
    call_command(
        "annotation_export", "--queue", "calib", "--out", str(out), "--as", "rafael", stdout=printed
    )
    assert f"{out}: calib v2, {len(cases)} labelled replies" in printed.getvalue()
    assert "Accuracy kappa" in printed.getvalue()
    again = parse_calibration_text(out.read_text())
    assert {r["digest"]: r["part"] for r in again.rows} == parts
    assert again.header["split"]["kept_from_version"] == 1


def _file():
    from django.conf import settings

    return settings.JUDGE_CALIBRATION_FILE


def test_the_committed_file_calibrates_per_part_and_the_cli_reads_it(
    labelled_queue, personas, django_capture_on_commit_callbacks
):
    out = _file()
    call_command(
        "annotation_export",
        "--queue",
        "calib",
        "--out",
        str(out),
        "--as",
        "rafael",
        stdout=StringIO(),
    )
    mei = client_for(personas.ml_engineer)
    page = mei.get("/annotation/calibrations/").content.decode()
    assert 'value="committed" selected>the committed human set (human.jsonl)' in page
    assert "llm:" not in page.split('id="calibration-judge"')[1].split("</select>")[0]
    with django_capture_on_commit_callbacks(execute=True):
        started = mei.post(
            "/annotation/calibrations/start/", {"judge": "programmatic", "dataset": "committed"}
        )
    assert started.status_code == 302
    row = JudgeCalibration.objects.get()
    assert row.label_set.path.endswith("human.jsonl") and row.part == "heldout"
    assert row.n == row.label_set.parts["heldout"]
    assert judge_standing(judge="programmatic").calibration == row
    listed = mei.get("/annotation/calibrations/").content.decode()
    acc = row.report["parts"]["heldout"]["accuracy"]["agreement_interval"]
    assert f"[{round(100 * acc[0])}, {round(100 * acc[1])}]" in listed
    detail = page_text(mei.get(f"/annotation/calibrations/{row.pk}/"))
    assert "Development part" in detail and "Held-out part" in detail
    assert "95% interval" in detail and "Between labellers" in detail
    assert "current calibration" in detail

    cli = run("evaluation", "calibrate", "--set", str(out), "--judge", "programmatic")
    assert cli.returncode == 0, cli.stderr
    for line in ("| dev | Accuracy |", "| dev | Effectiveness |", "| held-out | Accuracy |"):
        assert line in cli.stdout
    assert "Between labellers (6 replies labelled twice)" in cli.stdout
    heldout = next(x for x in cli.stdout.splitlines() if x.startswith("| held-out | Accuracy |"))
    assert f"| {row.n} | {100 * row.accuracy_agreement:.1f}% [" in heldout

    tampered = out.with_name("tampered.jsonl")
    lines = out.read_text().splitlines()
    row1 = json.loads(lines[1])
    row1["case"]["comments"] = ["something else"]
    tampered.write_text("\n".join([lines[0], json.dumps(row1), *lines[2:]]) + "\n")
    bad = run("evaluation", "calibrate", "--set", str(tampered))
    assert bad.returncode == 2 and "tampered.jsonl:2: digest" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_refused_generated_sets_small_samples_and_typed_urls(
    labelled_queue, personas, world, django_capture_on_commit_callbacks
):
    cases, catalogue = world
    dataset_import(
        name="dev",
        text="\n".join(json.dumps(c) for c in cases),
        source="dev.jsonl",
        actor=personas.admin,
        catalogue=catalogue.to_dict(),
    )
    mei = client_for(personas.ml_engineer)
    client_for(personas.reviewer).post("/annotation/q/calib/export/")

    def start(judge, dataset):
        return page_text(
            mei.post(
                "/annotation/calibrations/start/", {"judge": judge, "dataset": dataset}, follow=True
            )
        )

    assert "dataset: dev was not labelled by people in an annotation queue" in start(
        "programmatic", "dev"
    )
    assert "judge: one of programmatic" in start("llm:http://127.0.0.1:18999/v1:x", "calib-v1")
    assert "judge: one of programmatic" in start("llm", "calib-v1")  # no judge role endpoint
    assert "dataset: no committed human set at" in start("programmatic", "committed")
    broken = _file()
    broken.parent.mkdir(parents=True)
    broken.write_text('{"format": "hs-case/1"}\n')
    assert "dataset: the committed human set: " in start("programmatic", "committed")
    assert "format must be 'hs-calibration/1'" in start("programmatic", "committed")
    assert mei.get("/annotation/calibrations/").status_code == 200
    from django.conf import settings

    settings.CALIBRATION_MIN_REPLIES = 1000
    refused = start("programmatic", "calib-v1")
    assert "calib-v1 cannot decide a calibration: 18 labelled replies" in refused
    assert "a calibration needs at least 1000" in refused
    assert not JudgeCalibration.objects.exists()


def test_an_admin_retires_a_calibration_and_the_gate_stops_reading_it(
    labelled_queue, personas, django_capture_on_commit_callbacks
):
    client_for(personas.reviewer).post("/annotation/q/calib/export/")
    with django_capture_on_commit_callbacks(execute=True):
        client_for(personas.ml_engineer).post(
            "/annotation/calibrations/start/", {"judge": "programmatic", "dataset": "calib-v1"}
        )
    row = JudgeCalibration.objects.get()
    assert judge_standing(judge="programmatic").calibration == row
    for user in (personas.ml_engineer, personas.reviewer, personas.operator):
        assert (
            client_for(user).post(f"/annotation/calibrations/{row.pk}/retire/").status_code == 403
        )
    admin = client_for(personas.admin)
    assert (
        'id="retire-calibration"'
        in admin.get(f"/annotation/calibrations/{row.pk}/").content.decode()
    )
    retired = admin.post(f"/annotation/calibrations/{row.pk}/retire/", follow=True)
    assert "Retired" in page_text(retired) and "no gate reads it" in page_text(retired)
    row.refresh_from_db()
    assert row.retired_at is not None and row.retired_by == personas.admin
    standing = judge_standing(judge="programmatic")
    assert standing.calibration is None and standing.status == "uncalibrated"
    again = admin.post(f"/annotation/calibrations/{row.pk}/retire/", follow=True)
    assert "is retired already" in page_text(again)
    assert LabelSet.objects.count() == 1 and AnnotationQueue.objects.count() == 1


def test_the_llm_judge_is_the_judge_roles_endpoint_once_one_is_chosen(labelled_queue, personas):
    from studio.endpoints.models import ModelEndpoint, RoleEndpoint
    from studio.endpoints.services import endpoint_save

    endpoint = endpoint_save(
        endpoint=None,
        name="judge-server",
        route=ModelEndpoint.OPENAI,
        base_url="http://127.0.0.1:9/v1",
        model="demo-model",
        description="",
        actor=None,
    )
    RoleEndpoint.objects.create(role="judge", endpoint=endpoint)
    client_for(personas.reviewer).post("/annotation/q/calib/export/")
    mei = client_for(personas.ml_engineer)
    page = mei.get("/annotation/calibrations/").content.decode()
    assert '<option value="llm">llm: endpoint judge-server (the judge role' in page
    started = mei.post("/annotation/calibrations/start/", {"judge": "llm", "dataset": "calib-v1"})
    assert started.status_code == 302
    from studio.jobs.models import Job

    job = Job.objects.get(kind="judge_calibration")
    assert job.params == {"judge": "llm", "dataset_id": LabelSet.objects.get().dataset_id}
    typed = mei.post(
        "/annotation/calibrations/start/",
        {"judge": "llm:http://127.0.0.1:9/v1:demo-model", "dataset": "calib-v1"},
        follow=True,
    )
    assert "judge: one of programmatic, llm" in page_text(typed)
    assert Job.objects.filter(kind="judge_calibration").count() == 1
