"""Endpoints: what an endpoint names is checked when it is saved, and a connection test reports in
one line, never with a traceback (issue 14, finding 7).

Through the pages, as the roles that may manage endpoints (the ML engineer and the admin).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from django.test import Client

from studio.endpoints.models import ModelEndpoint
from studio.jobs.models import Job

pytestmark = pytest.mark.django_db

MANAGERS = ["ml_engineer", "admin"]


def _client(user) -> Client:
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def _local(model: str, name: str = "trained") -> dict[str, str]:
    return {
        "name": name,
        "route": "local",
        "base_url": "",
        "model": model,
        "api_key_secret": "",
        "script_path": "",
        "description": "",
    }


def _checkpoint(folder: Path) -> Path:
    """A folder shaped like save_pretrained's output (what is checked at save; loading is the test's
    job)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"\0")
    return folder


def _problems(response) -> str:
    assert response.status_code == 400, response.status_code
    body = response.content.decode()
    assert "Traceback" not in body
    return body


@pytest.mark.parametrize("role", MANAGERS)
def test_a_checkpoint_folder_that_does_not_exist_is_refused_naming_the_field(
    personas, role, tmp_path
):
    missing = tmp_path / "runs" / "hsa-sft" / "final"
    body = _problems(_client(getattr(personas, role)).post("/endpoints/new/", _local(str(missing))))
    assert f"model: {missing} does not exist" in body
    assert (
        "config.json and weights" in body
        and "leave empty for the built-in SmolLM2-135M-Instruct" in body
    )
    assert not ModelEndpoint.objects.filter(name="trained").exists()


def test_a_folder_that_is_not_a_checkpoint_is_refused_saying_what_is_missing(personas, tmp_path):
    client = _client(personas.ml_engineer)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert f"model: {empty} has no config.json" in _problems(
        client.post("/endpoints/new/", _local(str(empty)))
    )

    run = tmp_path / "run"  # a training run's folder: its own config.json, the model in final/
    run.mkdir()
    (run / "config.json").write_text("{}")
    _checkpoint(run / "final")
    body = _problems(client.post("/endpoints/new/", _local(str(run))))
    assert f"{run} has config.json but no weights" in body and "model.safetensors" in body
    assert "a training run keeps its model in final/" in body

    a_file = tmp_path / "weights.bin"
    a_file.write_bytes(b"\0")
    assert "is a file, not a checkpoint folder" in _problems(
        client.post("/endpoints/new/", _local(str(a_file)))
    )
    assert not ModelEndpoint.objects.exists()


def test_a_checkpoint_folder_is_saved_and_an_edit_to_a_missing_one_changes_nothing(
    personas, tmp_path
):
    client = _client(personas.admin)
    folder = _checkpoint(tmp_path / "final")
    assert client.post("/endpoints/new/", _local(str(folder))).status_code == 302
    endpoint = ModelEndpoint.objects.get(name="trained")
    assert endpoint.model == str(folder)

    edited = {**_local(str(tmp_path / "gone")), "description": "half-saved?"}
    assert "does not exist" in _problems(client.post(f"/endpoints/{endpoint.pk}/edit/", edited))
    endpoint.refresh_from_db()
    assert endpoint.model == str(folder) and endpoint.description == ""


def test_a_script_file_that_does_not_exist_or_is_not_a_script_is_refused(personas, tmp_path):
    client = _client(personas.ml_engineer)
    data = {
        "name": "replay",
        "route": "scripted",
        "base_url": "",
        "model": "",
        "api_key_secret": "",
        "description": "",
    }
    missing = tmp_path / "missing.json"
    body = _problems(client.post("/endpoints/new/", {**data, "script_path": str(missing)}))
    assert "script_path:" in body and str(missing) in body
    not_a_script = tmp_path / "binary.json"
    not_a_script.write_bytes(b"\xff\xfe\x00garbage")
    assert "script_path:" in _problems(
        client.post("/endpoints/new/", {**data, "script_path": str(not_a_script)})
    )
    assert not ModelEndpoint.objects.exists()


def test_people_who_may_not_manage_endpoints_cannot_save_one(personas, tmp_path):
    for role in ("operator", "reviewer", "outsider"):
        response = _client(getattr(personas, role)).post("/endpoints/new/", _local(str(tmp_path)))
        assert response.status_code == 403, role
    assert not ModelEndpoint.objects.exists()


def _run_connection_test(client, endpoint, capture) -> Job:
    with capture(execute=True):
        response = client.post(f"/endpoints/{endpoint.pk}/test/", follow=True)
    assert response.status_code == 200
    job = Job.objects.get(kind="endpoint_test")
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    for text in (page, job.log_tail, job.error):
        assert "Traceback" not in text and 'File "' not in text
    return job


@pytest.mark.parametrize("role", MANAGERS)
def test_a_connection_test_of_a_folder_removed_since_saving_reports_one_line(
    personas, role, tmp_path, django_capture_on_commit_callbacks
):
    client = _client(getattr(personas, role))
    folder = _checkpoint(tmp_path / "final")
    assert client.post("/endpoints/new/", _local(str(folder))).status_code == 302
    (folder / "model.safetensors").unlink()
    (folder / "config.json").unlink()
    folder.rmdir()
    job = _run_connection_test(
        client, ModelEndpoint.objects.get(name="trained"), django_capture_on_commit_callbacks
    )
    assert job.status == Job.FAILED
    assert job.error == f"{folder} does not exist"
    assert f"failed: {folder} does not exist" in job.log_tail
    endpoint = ModelEndpoint.objects.get(name="trained")
    assert endpoint.last_check_ok is False and endpoint.last_check_message == job.error
    assert job.error in client.get("/endpoints/").content.decode()


@pytest.mark.usefixtures("loopback_is_public")
def test_a_connection_test_of_a_server_that_is_not_there_reports_one_line(
    personas, django_capture_on_commit_callbacks
):
    client = _client(personas.ml_engineer)
    data = {
        "name": "remote",
        "route": "openai",
        "base_url": "http://127.0.0.1:9/v1",
        "model": "m",
        "api_key_secret": "",
        "script_path": "",
        "description": "",
    }
    assert client.post("/endpoints/new/", data).status_code == 302
    job = _run_connection_test(
        client, ModelEndpoint.objects.get(name="remote"), django_capture_on_commit_callbacks
    )
    assert job.status == Job.FAILED
    assert (
        job.error.startswith("GET http://127.0.0.1:9/v1/models: ConnectError")
        and "\n" not in job.error
    )


class _Hostile(BaseHTTPRequestHandler):
    """A server whose /models answer is JSON but not a model list, or far too large."""

    answers: dict[str, bytes] = {
        "/list/models": json.dumps([1, 2, 3]).encode(),
        "/items/models": json.dumps({"data": ["a", 1, None]}).encode(),
        "/huge/models": b'{"data": [' + b'{"id": "m"},' * 200_000 + b'{"id": "m"}]}',
    }

    def do_GET(self):  # noqa: N802 (http.server's naming)
        body = self.answers[self.path]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def hostile_server():
    server = HTTPServer(("127.0.0.1", 0), _Hostile)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.mark.parametrize(
    "path, reason",
    [
        ("/list", 'no "data" list of models'),
        ("/items", "does not list model 'm'"),
        ("/huge", "larger than 1 MB"),
    ],
)
def test_a_connection_test_of_a_server_with_a_strange_answer_reports_one_line(
    personas, hostile_server, path, reason, django_capture_on_commit_callbacks
):
    client = _client(personas.admin)
    data = {
        "name": "odd",
        "route": "openai",
        "base_url": f"{hostile_server}{path}",
        "model": "m",
        "api_key_secret": "",
        "script_path": "",
        "description": "",
    }
    assert client.post("/endpoints/new/", data).status_code == 302
    job = _run_connection_test(
        client, ModelEndpoint.objects.get(name="odd"), django_capture_on_commit_callbacks
    )
    assert job.status == Job.FAILED and reason in job.error and "\n" not in job.error


def test_a_field_that_cannot_be_read_is_named_and_nothing_is_saved(personas):
    response = _client(personas.ml_engineer).post("/endpoints/new/", _local("", name="bad\x00name"))
    assert response.status_code == 400
    assert "name: Null characters are not allowed." in response.content.decode()
    assert not ModelEndpoint.objects.filter(name__startswith="bad").exists()
