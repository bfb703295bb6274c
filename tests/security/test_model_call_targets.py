"""Issue 50 finding 4 (and the tracebacks of finding 10): no free URLs for the worker.

A calibration judge spec ``llm:http://127.0.0.1:18999/v1:x`` sent the worker to a local listener
(and served as a port scan of 6379 and 5432); /jobs/3/, which the operator can open, showed the
listener's 500 body and a full traceback; a spec of ``panel:`` repeated 3,000 times was a 500.

- A model call from the studio goes only to a registered endpoint (``registry_role_model``), and a
  loopback or private address only to an endpoint an admin saved: an ML engineer's is refused when
  saved, and, saved before or resolving there later, when the worker would call it.
- A failed job's page shows its error's class and a short message; the traceback and the answer's
  body only to admins.
- A judge spec of nested panels is a clear error, through the calibration form and the CLI.

Through the endpoint and job pages and the calibration form with the personas (eager jobs), and the
evaluation CLI as a subprocess.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.test import Client

from studio.endpoints.models import ModelEndpoint
from studio.endpoints.services import EndpointError, registry_role_model
from studio.jobs.models import Job

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


def _client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _form(base_url: str, name: str = "scan") -> dict:
    return {
        "name": name,
        "route": "openai",
        "base_url": base_url,
        "model": "x",
        "description": "",
        "api_key_secret": "",
    }


class Listener:
    """A TCP listener on loopback that counts the connections it is sent."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=2)
        self.sock.close()


@pytest.fixture
def listener():
    server = Listener()
    yield server
    server.close()


@pytest.mark.parametrize(
    "base_url",
    [
        "http://127.0.0.1:6379/v1",
        "http://localhost:5432/v1",
        "http://[::1]:8000/v1",
        "http://10.0.0.5:8001/v1",
        "http://169.254.169.254/latest",
        "http://0.0.0.0:8000/v1",
    ],
)
def test_an_ml_engineer_cannot_register_a_loopback_or_private_address(personas, base_url):
    response = _client(personas.ml_engineer).post("/endpoints/new/", _form(base_url))
    page = response.content.decode()
    assert response.status_code == 400
    assert "base_url:" in page and "loopback or private address" in page
    assert not ModelEndpoint.objects.filter(name="scan").exists()


def test_an_admin_registers_a_private_endpoint_and_an_ml_engineer_cannot_take_it_over(personas):
    admin, mei = _client(personas.admin), _client(personas.ml_engineer)
    assert admin.post("/endpoints/new/", _form("http://127.0.0.1:8001/v1", "sglang")).status_code
    endpoint = ModelEndpoint.objects.get(name="sglang")
    assert endpoint.saved_by_admin
    # mei edits it to another port of the same machine: refused, and nothing changes
    response = mei.post(
        f"/endpoints/{endpoint.pk}/edit/", _form("http://127.0.0.1:6379/v1", "sglang")
    )
    assert (
        response.status_code == 400 and "loopback or private address" in response.content.decode()
    )
    endpoint.refresh_from_db()
    assert endpoint.base_url == "http://127.0.0.1:8001/v1" and endpoint.saved_by_admin


def test_the_worker_refuses_a_private_address_no_admin_saved(
    personas, listener, eager_jobs, django_capture_on_commit_callbacks
):
    # saved before the rule, or a public name that resolves to loopback since
    endpoint = ModelEndpoint.objects.create(
        name="rebound",
        route=ModelEndpoint.OPENAI,
        base_url=f"http://127.0.0.1:{listener.port}/v1",
        model="x",
        created_by=personas.ml_engineer,
    )
    with django_capture_on_commit_callbacks(execute=True):
        response = _client(personas.ml_engineer).post(f"/endpoints/{endpoint.pk}/test/")
    assert response.status_code == 302
    job = Job.objects.get(kind="endpoint_test")
    endpoint.refresh_from_db()
    assert endpoint.last_check_ok is False
    assert "loopback or private address" in endpoint.last_check_message
    assert "nothing was sent" in endpoint.last_check_message
    assert listener.connections == 0, job.log_tail
    with pytest.raises(EndpointError, match="loopback or private address"):
        registry_role_model(role="judge", target="rebound")


def test_a_role_model_comes_from_the_registry_never_from_a_url(personas):
    ModelEndpoint.objects.create(
        name="judge-box", route=ModelEndpoint.TINY, created_by=personas.ml_engineer
    )
    for target in ("http://127.0.0.1:18999/v1:x", "openai:http://127.0.0.1:18999/v1:x", "local"):
        with pytest.raises(EndpointError, match="not a registered endpoint"):
            registry_role_model(role="judge", target=target, build=False)
    with pytest.raises(EndpointError, match="no endpoint is chosen for the judge role"):
        registry_role_model(role="judge", target="", build=False)
    assert registry_role_model(role="judge", target="judge-box", build=False).label == "judge-box"


def _failing_kind(message: str):
    from studio.jobs.registry import JOB_KINDS, JobKind

    def run(context):
        context.log("calling the judge")
        try:
            raise ConnectionError("the server closed the connection")
        except ConnectionError as error:
            raise RuntimeError(message) from error

    JOB_KINDS["test_failing_call"] = JobKind(name="test_failing_call", label="test", run=run)


BODY = "<html>Internal error in /srv/listener/app.py: SECRET-BODY-17</html>"


def test_a_failed_calls_page_shows_its_class_and_a_short_message_tracebacks_to_admins(
    personas, eager_jobs, django_capture_on_commit_callbacks
):
    from studio.jobs.registry import JOB_KINDS
    from studio.jobs.services import job_create

    message = f"http://127.0.0.1:18999/v1: InternalServerError: Error code: 500 - {BODY}"
    _failing_kind(message)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            job = job_create(
                kind="test_failing_call", title="call", params={}, created_by=personas.reviewer
            )
    finally:
        JOB_KINDS.pop("test_failing_call")
    job.refresh_from_db()
    assert job.status == Job.FAILED and "Traceback" in job.log_tail and BODY in job.error

    for persona in ("operator", "reviewer", "ml_engineer"):
        client = _client(getattr(personas, persona))
        for url in (f"/jobs/{job.pk}/", f"/jobs/{job.pk}/status/"):
            page = client.get(url).content.decode()
            assert (
                "RuntimeError: http://127.0.0.1:18999/v1: InternalServerError: Error code: 500"
                in (page)
            ), persona
            assert "SECRET-BODY" not in page and "/srv/listener" not in page, persona
            assert "Traceback (most" not in page and 'File "' not in page, persona
            assert "[traceback hidden: an admin sees it]" in page
    admin_page = _client(personas.admin).get(f"/jobs/{job.pk}/").content.decode()
    assert "Traceback (most recent call last)" in admin_page and "SECRET-BODY" in admin_page


@pytest.mark.parametrize(
    "judge", ["panel:" * 3000, "panel:", "panel:programmatic|panel:programmatic|programmatic"]
)
def test_a_judge_spec_of_nested_panels_is_a_clear_error_in_the_studio(personas, judge):
    from studio.evolution.models import Dataset

    Dataset.objects.create(name="labelled")
    response = _client(personas.reviewer).post(
        "/annotation/calibrations/start/", {"judge": judge, "dataset": "labelled"}, follow=True
    )
    page = response.content.decode()
    assert response.status_code < 500
    assert "judge:" in page and ("panel" in page), page[-2000:]
    assert not Job.objects.filter(kind="judge_calibration").exists()


def test_a_judge_spec_of_nested_panels_is_a_clear_error_in_the_cli():
    cases = ROOT / "tests" / "evaluation" / "testdata" / "cases_valid.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "evaluation", "calibrate", "--set", str(cases), "--judge"]
        + ["panel:" * 3000],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "a panel lists judges, not panels" in done.stderr
    assert "RecursionError" not in done.stderr and "Traceback" not in done.stderr


def test_a_training_runs_page_shows_its_jobs_log_without_tracebacks_to_non_admins(
    personas, tmp_path
):
    from studio.training.models import TrainingRun

    job = Job.objects.create(
        kind="test_sft",
        title="sft run",
        status=Job.FAILED,
        params={},
        error=f"RuntimeError: Error code: 500 - {BODY}",
        log_tail=(
            "[10:00:00] started\n[10:00:01] Traceback (most recent call last):\n"
            '  File "/srv/studio/training/runner.py", line 9, in run\n'
            f"RuntimeError: Error code: 500 - {BODY}\n"
        ),
    )
    run = TrainingRun.objects.create(
        kind=TrainingRun.SFT,
        title="sft run",
        folder=str(tmp_path),
        config_digest="0" * 64,
        job=job,
        steps=[],
        config={},
    )
    for url in (f"/training/runs/{run.pk}/", f"/training/runs/{run.pk}/live/"):
        page = _client(personas.operator).get(url).content.decode()
        assert "SECRET-BODY" not in page and "/srv/studio" not in page, url
        assert "Error code: 500" in page, url
    admin_page = _client(personas.admin).get(f"/training/runs/{run.pk}/").content.decode()
    assert "SECRET-BODY" in admin_page and "/srv/studio/training/runner.py" in admin_page
