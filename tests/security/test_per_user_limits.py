"""Issue 41 item 8: no person can take every worker, and an upload is refused before it is written.

Six 300 s playground runs were accepted in 0.9 s and another user's 0.5 s job waited 49 s behind
them; a 300 MiB multipart upload sent as a reviewer was written to /tmp in full before its 400; a
15 s tiny SFT started two 120-case evaluations by itself; the worker check accepted 600 s waits.
Through the studio's views with the personas, and a raw HTTP request against the live server.
"""

from __future__ import annotations

import glob
import socket
import tempfile
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from studio.endpoints.services import endpoint_save
from studio.jobs.models import Job
from studio.jobs.services import job_create, job_run
from tests.studio.studio_testing import client_for

SCRIPT = Path(__file__).parents[1] / "studio" / "testdata" / "price.script.json"
REQUEST = (
    '{"id": "pg", "comments": ["How much is product #3?"], '
    '"room": {"current_link_id": 1, "shelf": [1, 2, 3]}}'
)


@pytest.mark.django_db
def test_a_persons_jobs_are_capped_with_a_refusal_that_names_the_limit_and_the_jobs(
    personas, demo_version, settings
):
    from studio import settings as defaults

    settings.JOB_QUOTA_PER_USER = (
        defaults.JOB_QUOTA_PER_USER
    )  # the default (tests/conftest.py turns it off)
    assert settings.JOB_QUOTA_PER_USER == 3
    endpoint = endpoint_save(
        endpoint=None,
        name="scripted-price",
        route="scripted",
        base_url="",
        model="",
        description="",
        actor=personas.ml_engineer,
        script_path=str(SCRIPT),
    )
    form = {"version": demo_version.pk, "endpoint": endpoint.pk, "request_json": REQUEST}
    rafael, olivia = client_for(personas.reviewer), client_for(personas.operator)
    for _ in range(3):  # no worker takes them here: they stay queued, as behind six long runs
        assert rafael.post("/playground/", form).status_code == 302
    refused = rafael.post("/playground/", form)
    page = refused.content.decode()
    assert refused.status_code == 429
    assert "already has 3 jobs queued or running, the limit per user (JOB_QUOTA_PER_USER=3)" in page
    assert all(f"#{job.pk} " in page for job in Job.objects.filter(created_by=personas.reviewer))
    assert Job.objects.filter(created_by=personas.reviewer).count() == 3
    assert olivia.post("/playground/", form).status_code == 302  # another person is not held up


@pytest.mark.django_db
def test_the_worker_check_asks_for_at_most_thirty_seconds(personas):
    admin = client_for(personas.admin)
    for seconds in ("600", "31", "nan", "-1", "x"):
        refused = admin.post("/jobs/worker-check/", {"seconds": seconds})
        assert (
            refused.status_code == 400
            and "seconds: a number from 0.5 to 30" in refused.content.decode()
        )
    assert not Job.objects.exists()
    assert admin.post("/jobs/worker-check/", {"seconds": "2"}).status_code == 302


@pytest.mark.django_db(transaction=True)
def test_an_oversized_upload_is_refused_before_it_is_read(personas, live_server):
    client = client_for(personas.reviewer)
    client.get("/")  # a session
    cookie = client.cookies["sessionid"].value
    before = set(glob.glob(str(Path(tempfile.gettempdir()) / "*.upload*")))
    parts = urlsplit(live_server.url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as sock:
        sock.sendall(
            b"POST /import/ HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: multipart/form-data; boundary=b\r\n"
            + f"Content-Length: {300 * 1024 * 1024}\r\nCookie: sessionid={cookie}\r\n\r\n".encode()
            + b'--b\r\nContent-Disposition: form-data; name="bundle"; filename="x.zip"\r\n\r\n'
            + b"\0" * 65536
        )
        answer = b""
        while b"nothing was read" not in answer:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 413"), answer[:300]
    assert b"the request body is 314572800 bytes; the studio accepts at most" in answer
    assert set(glob.glob(str(Path(tempfile.gettempdir()) / "*.upload*"))) == before


@pytest.mark.django_db
def test_follow_on_jobs_can_be_turned_off_and_never_run_ahead_of_a_persons_job(
    personas, settings, monkeypatch
):
    from studio.jobs import tasks

    person = job_create(
        kind="worker_check", title="mine", params={"seconds": 0.1}, created_by=personas.admin
    )
    follow_on = job_create(
        kind="worker_check",
        title="follow-on",
        params={"seconds": 0.1},
        created_by=personas.admin,
        automatic=True,
    )
    sent = []
    monkeypatch.setattr(
        tasks.run_job, "apply_async", lambda args, **options: sent.append((args, options))
    )
    assert job_run(job_id=follow_on.pk) is None  # a person's job is queued: the follow-on waits
    follow_on.refresh_from_db()
    assert follow_on.status == Job.QUEUED and sent and sent[0][0] == (follow_on.pk,)
    assert sent[0][1]["countdown"] == settings.AUTOMATIC_JOB_YIELD_S
    Job.objects.filter(pk=person.pk).update(status=Job.SUCCEEDED)
    assert job_run(job_id=follow_on.pk, heartbeat=False).status == Job.SUCCEEDED

    # automatic jobs are outside the quota
    settings.JOB_QUOTA_PER_USER = 1
    job_create(
        kind="worker_check", title="one", params={"seconds": 0.1}, created_by=personas.operator
    )
    job_create(
        kind="worker_check",
        title="auto",
        params={"seconds": 0.1},
        created_by=personas.operator,
        automatic=True,
    )

    settings.FOLLOW_ON_JOBS = False
    from studio.compatibility.models import LabelServer  # noqa: F401  (the label-move signal's switch)
    from studio.compatibility.signals import label_moved

    class _Label:  # the signal returns before it looks at the label when follow-ons are off
        harness_id = 0

    before = Job.objects.count()
    label_moved(sender=None, instance=_Label())
    assert Job.objects.count() == before


@pytest.mark.django_db
def test_the_worker_check_without_seconds_sleeps_five_and_an_empty_one_is_refused(personas):
    admin = client_for(personas.admin)
    refused = admin.post("/jobs/worker-check/", {"seconds": ""})
    assert (
        refused.status_code == 400
        and "seconds: a number from 0.5 to 30, not ''" in refused.content.decode()
    )
    assert admin.post("/jobs/worker-check/", {}).status_code == 302
    assert Job.objects.get().params == {"seconds": 5.0}
