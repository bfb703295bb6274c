"""The replay dashboards as each role reads them: a real `python -m serving replay` on the tiny
route (its folder copied under two studio runs), the figures per level as serving's own summary
gives them, the CDF, the run record and the exact command; two replays side by side; the ids a
compare link may carry; a replay that runs, failed, lost its folder or cannot be read; a
requests.jsonl over the cap."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest
from studio_testing import client_for

from serving.charts import format_figure
from serving.record import RunWriter, load_run
from serving.replay_config import ReplayConfig
from studio.jobs.models import Job
from studio.replays import selectors
from studio.training.models import TrainingRun
from studio.training.selectors import read_folder_summary
from tests import artefacts

pytestmark = pytest.mark.django_db

READERS = ("operator", "reviewer", "ml_engineer", "admin")


@pytest.fixture(scope="module")
def tiny_replay(tmp_path_factory):
    """A replay folder made by the real command on the tiny CPU route: levels 1 and 2, 2 measured
    each."""
    cases = artefacts.replay_cases(tmp_path_factory, 3)
    out = tmp_path_factory.mktemp("replay")
    argv = ReplayConfig(
        route="cpu-engine-tiny",
        cases=str(cases),
        concurrency=[1, 2],
        warmup=1,
        measured=2,
        max_tokens=16,
        run_id="replay",
    ).argv(out=str(out))
    done = subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return {"folder": out / "replay", "argv": argv, "cases": cases}


def _replay_run(
    tmp_path, name, *, source=None, status=Job.SUCCEEDED, error="", argv=None, title="tiny replay"
):
    """A replay run row as the training app leaves it: folder RUN/replay/, its command, the stored
    summary."""
    folder = tmp_path / name
    folder.mkdir()
    if source is not None:
        shutil.copytree(source, folder / "replay")
    argv = argv or [
        "serving",
        "replay",
        "--route",
        "cpu-engine-tiny",
        "--out",
        str(folder),
        "--run-id",
        "replay",
    ]
    job = Job.objects.create(kind="replay_run", title=title, status=status, error=error, params={})
    run = TrainingRun.objects.create(
        kind="replay",
        title=title,
        folder=str(folder),
        config_digest="0" * 64,
        steps=[{"name": "replay", "argv": argv, "config_file": "replay.yaml", "output": "replay"}],
        config={"replay": {"route": "cpu-engine-tiny", "concurrency": [1, 2]}},
        model="cpu-engine-tiny",
        job=job,
    )
    if status == Job.SUCCEEDED and source is not None:
        run.summary = read_folder_summary(run=run)  # what the worker stores when the job ends
        run.save(update_fields=["summary"])
    return run


def _chart(page: str, key: str) -> dict:
    data = json.loads(
        re.search(
            r'<script id="replay-chart-data" type="application/json">(.*?)</script>', page, re.S
        ).group(1)
    )
    return next(c for c in data if c["key"] == key)


def _cells(page: str, level: str) -> dict[str, str]:
    row = re.search(rf'<tr data-level="{level}">(.*?)</tr>', page, re.S).group(1)
    return dict(re.findall(r'data-key="([a-z0-9_]+)">([^<]*)</td>', row))


@pytest.mark.slow
def test_every_role_reads_a_real_tiny_replay_level_by_level(personas, tiny_replay, tmp_path):
    run = _replay_run(
        tmp_path,
        "run-1",
        source=tiny_replay["folder"],
        argv=tiny_replay["argv"][:-4] + ["--out", str(tmp_path / "run-1"), "--run-id", "replay"],
    )
    meta, summary = load_run(run.path / "replay")
    for role in READERS:
        response = client_for(getattr(personas, role)).get(f"/replay/{run.pk}/")
        assert response.status_code == 200, role
    page = response.content.decode()
    assert 'data-state="finished"' in page and 'data-active="no"' in page
    for level in ("1", "2"):
        figures = summary["levels"][level]
        cells = _cells(page, level)
        assert cells == {key: format_figure(key, figures[key]) for key in selectors.LEVEL_FIGURES}
        assert figures["n_measured"] == 2 and cells["wall_p95_s"] != "n/a"
    cdf = _chart(page, "cdf")
    assert [s["name"] for s in cdf["series"]] == ["C=1 (n=2)", "C=2 (n=2)"]
    assert all(
        s["points"][0] == [0.0, 0.0] and len(s["points"]) == s["n"] + 1 for s in cdf["series"]
    )
    assert cdf["series"][0]["points"][-1][1] == summary["levels"]["1"]["success_rate"]
    latency = _chart(page, "latency")
    p95 = next(s for s in latency["series"] if s["name"] == "wall P95")["points"]
    assert p95 == [
        [1, summary["levels"]["1"]["wall_p95_s"]],
        [2, summary["levels"]["2"]["wall_p95_s"]],
    ]
    # the run record: what a second run needs to be the same run
    record = re.search(r'id="run-record">(.*?)</table>', page, re.S).group(1)
    assert (
        "python -m serving replay --route cpu-engine-tiny --cases " + str(tiny_replay["cases"])
        in record
    )
    assert meta["harness"]["digest"] in record and meta["cases"]["digest"] in record
    assert "1 warm-up + 2 measured cases per level" in record and "<code>tiny</code>" in record
    assert (
        "max tokens 16" in record and "SLA 15.0 s" in record and meta["host"]["hostname"] in record
    )
    assert "no draft head" in page
    assert '<a href="/replay/">Replays</a>' in page  # the nav
    run_page = client_for(personas.operator).get(f"/training/runs/{run.pk}/").content.decode()
    assert f'id="replay-dashboard-link" href="/replay/{run.pk}/"' in run_page

    assert client_for(personas.outsider).get(f"/replay/{run.pk}/").status_code == 403
    anonymous = client_for(None).get(f"/replay/{run.pk}/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


@pytest.mark.slow
def test_the_list_shows_each_replay_and_two_compare_level_by_level(personas, tiny_replay, tmp_path):
    a = _replay_run(tmp_path, "run-a", source=tiny_replay["folder"], title="before")
    b = _replay_run(tmp_path, "run-b", source=tiny_replay["folder"], title="after")
    # B's first measured request took a second longer: its figures move, A's stay
    requests = b.path / "replay" / "requests.jsonl"
    records = [json.loads(line) for line in requests.read_text().splitlines()]
    first = next(r for r in records if r["phase"] == "measured" and r["concurrency"] == 1)
    first["wall_s"] += 1.0
    requests.write_text("".join(json.dumps(r) + "\n" for r in records))
    _, summary_a = load_run(a.path / "replay")
    _, summary_b = load_run(b.path / "replay")

    page = client_for(personas.operator).get("/replay/").content.decode()
    row = re.search(rf'<tr data-run="{a.pk}">(.*?)</tr>', page, re.S).group(1)
    assert "cpu-engine-tiny" in row and "<code>tiny</code>" in row and "finished" in row
    assert f"C=1: {format_figure('wall_p95_s', summary_a['levels']['1']['wall_p95_s'])} s" in row
    assert f"C=2: {format_figure('wall_p95_s', summary_a['levels']['2']['wall_p95_s'])} s" in row
    assert 'id="replay-compare"' in page

    response = client_for(personas.reviewer).get(f"/replay/compare/?a={a.pk}&b={b.pk}")
    assert response.status_code == 200
    page = response.content.decode()
    wall = re.search(r'<tr data-level="1" data-metric="wall_p95_s">(.*?)</tr>', page, re.S).group(1)
    difference = summary_b["levels"]["1"]["wall_p95_s"] - summary_a["levels"]["1"]["wall_p95_s"]
    assert difference > 0.5
    assert f"<td>+{format_figure('wall_p95_s', difference)}</td>" in wall and ">worse<" in wall
    same = re.search(r'<tr data-level="2" data-metric="wall_p95_s">(.*?)</tr>', page, re.S).group(1)
    assert "<td>±0.000</td>" in same and ">same<" in same
    assert "compare-warning" not in page  # the same cases, Harness and settings: paired


def test_a_compare_link_names_the_parameter_it_cannot_use(personas, tmp_path):
    replay = _replay_run(tmp_path, "run-r")
    sft = TrainingRun.objects.create(
        kind="sft", title="sft", folder=str(tmp_path), config_digest="0" * 64
    )
    client = client_for(personas.operator)
    cases = {
        f"?b={replay.pk}": "a: missing; give the ids of two replay runs",
        f"?a=x&b={replay.pk}": "a: &#x27;x&#x27; is not a run id; give a whole number",
        f"?a={replay.pk}": "b: missing",
        f"?a={replay.pk}&b={sft.pk}": f"b: run #{sft.pk} is a HSA-SFT run, not a deployment replay",
        f"?a={replay.pk}&b=-1": "b: &#x27;-1&#x27; is not a run id",
    }
    for query, message in cases.items():
        response = client.get(f"/replay/compare/{query}")
        assert response.status_code == 400, query
        assert message in response.content.decode(), query
    missing = client.get(f"/replay/compare/?a=99999&b={replay.pk}")
    assert missing.status_code == 404 and "a: no run #99999" in missing.content.decode()
    assert client.get("/replay/99999/").status_code == 404
    not_replay = client.get(f"/replay/{sft.pk}/")
    assert (
        not_replay.status_code == 404
        and "is a HSA-SFT run, not a deployment replay" in not_replay.content.decode()
    )


def _writer_folder(run: TrainingRun, *, records, status="finished", levels=None, route=True):
    writer = RunWriter(root=run.path, run_id="replay")
    for record in records:
        writer.record(record)
    writer.close()
    meta = {
        "run_id": "replay",
        "status": status,
        "harness": {"name": "livestream-avatar", "digest": "d" * 64},
        "cases": {
            "digest": "c" * 64,
            "path": "/cases.jsonl",
            "warmup_ids": [],
            "measured_ids": ["x"],
        },
        "concurrency": [1, 2],
        "generation": {"temperature": 1.0, "top_p": 0.95, "max_tokens": 8},
        "sla_s": 15.0,
        "levels": levels or [],
        "host": {"hostname": "worker-7"},
    }
    if route:
        meta["route"] = {
            "route": "cpu-engine-tiny",
            "engine": "local",
            "checkpoint": {"name": "tiny"},
        }
    writer.write_json("run.json", meta)
    return writer.dir


def _request(wall, *, concurrency=1, ok=True):
    return {
        "phase": "measured",
        "concurrency": concurrency,
        "ok": ok,
        "status": "ok" if ok else "timeout",
        "wall_s": wall if ok else None,
        "has_trajectory": ok,
        "calls": [
            {"ttft_s": 0.1, "latency_s": 0.6, "input_tokens": 10, "output_tokens": 6, "error": None}
        ],
    }


def test_a_running_a_failed_a_lost_and_a_damaged_replay_each_say_so(personas, tmp_path):
    client = client_for(personas.operator)
    running = _replay_run(tmp_path, "running", status=Job.RUNNING)
    folder = _writer_folder(
        running, records=[_request(1.0), _request(2.0)], status="running", levels=[]
    )  # level 1 has not ended yet
    with (folder / "requests.jsonl").open("a") as handle:
        handle.write('{"phase": "meas')  # the request being written now
    page = client.get(f"/replay/{running.pk}/").content.decode()
    assert (
        'data-active="yes"' in page
        and "running: the figures below are of the requests measured so far" in page
    )
    assert "in progress" in _cells_row(page, "1")

    opening = _replay_run(tmp_path, "opening", status=Job.RUNNING)
    _writer_folder(opening, records=[], status="running", route=False)
    page = client.get(f"/replay/{opening.pk}/").content.decode()
    assert (
        "nothing to show yet:" in page
        and "the replay is still opening its route; nothing is measured yet" in page
    )

    failed = _replay_run(
        tmp_path,
        "failed",
        status=Job.FAILED,
        error="replay: `python -m serving replay ...` exited with 2: error: route cpu-x: unknown",
    )
    response = client.get(f"/replay/{failed.pk}/")
    page = response.content.decode()
    assert (
        response.status_code == 200
        and "failed: replay: `python -m serving replay ...` exited with 2" in page
    )
    assert f"{failed.path / 'replay'} is missing: the replay left no record on this host" in page

    damaged = _replay_run(tmp_path, "damaged")
    (damaged.path / "replay").mkdir()
    (damaged.path / "replay" / "run.json").write_text("{broken")
    response = client.get(f"/replay/{damaged.pk}/")
    assert response.status_code == 200
    assert "the replay folder cannot be read:" in response.content.decode()
    assert "run.json: not valid JSON" in response.content.decode()

    compared = client.get(f"/replay/compare/?a={failed.pk}&b={damaged.pk}")
    assert compared.status_code == 200
    assert f"a (run #{failed.pk}): {failed.path / 'replay'} is missing" in compared.content.decode()


def _cells_row(page: str, level: str) -> str:
    return re.search(rf'<tr data-level="{level}">(.*?)</tr>', page, re.S).group(1)


def test_a_huge_requests_file_is_read_up_to_the_cap_and_the_page_says_so(
    personas, tmp_path, monkeypatch
):
    run = _replay_run(tmp_path, "huge")
    records = [_request(0.5 + i / 1000) for i in range(3000)] + [
        _request(1.0, concurrency=2) for _ in range(50)
    ]
    folder = _writer_folder(run, records=records)
    size = (folder / "requests.jsonl").stat().st_size
    monkeypatch.setattr(selectors, "REQUESTS_READ_BYTES", size // 2)
    page = client_for(personas.ml_engineer).get(f"/replay/{run.pk}/").content.decode()
    note = re.search(r'id="replay-read-note">(.*?)</p>', page, re.S).group(1)
    assert f"requests.jsonl holds {size / 1048576:.1f} MiB; the dashboard read its first" in note
    assert "level(s) 2 are not shown" in note and "python -m serving report" in note
    assert 'data-level="2"' not in page
    read = int(re.search(r"\((\d+) requests\)", note).group(1))
    assert 1000 < read < 3000 and f"<td>{read}</td>" in _cells_row(page, "1")
    cdf = _chart(page, "cdf")["series"][0]
    assert (
        len(cdf["points"]) == selectors.CDF_POINTS + 1 and cdf["n"] == read
    )  # bounded, whatever was read


def test_the_draft_heads_acceptance_is_shown_per_level(personas, tmp_path):
    run = _replay_run(tmp_path, "mtp")
    speculative = {
        "cycles": 40,
        "drafted": 120,
        "accepted": 60,
        "acceptance_length": 2.5,
        "acceptance_rate": 0.5,
        "acceptance_rate_per_position": [0.8, 0.5, 0.2],
        "source": "engine counters",
    }
    _writer_folder(
        run,
        records=[_request(1.0), _request(1.5, concurrency=2)],
        levels=[{"concurrency": 1, "speculative": speculative}, {"concurrency": 2}],
    )
    page = client_for(personas.reviewer).get(f"/replay/{run.pk}/").content.decode()
    assert "length 2.50, rate 50.0%" in _cells_row(page, "1") and "0.8, 0.5, 0.2" in _cells_row(
        page, "1"
    )
    assert "no draft head" in _cells_row(page, "2")
