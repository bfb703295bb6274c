"""Issue 41 item 5: a keyless endpoint sends no key, and a training command sees no secret.

``OpenAIChatPolicy`` let the OpenAI client read ``OPENAI_API_KEY`` from the environment, so a
keyless studio endpoint pointed at someone's own server received the worker's key in the playground
(and the SFT teacher ``openai:`` in a training child, which inherited the worker's whole
environment). Through the playground on a real Celery worker whose environment holds
``OPENAI_API_KEY``, talking to a listening server that records every ``Authorization`` header; and
the training runner's child process.
"""

from __future__ import annotations

import sys

import pytest

from studio.endpoints.services import endpoint_save
from studio.jobs.models import Job
from studio.jobs.testing import celery_worker
from studio.training.runner import run_command
from tests.security.test_studio_mcp_registry import run_in_playground
from tests.studio.studio_testing import client_for

WORKER_KEY = "sk-worker-OPENAI-KEY-NEVER-FOR-A-KEYLESS-ENDPOINT"


@pytest.mark.usefixtures("loopback_is_public")
@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_keyless_endpoint_sends_no_key_from_the_workers_environment(
    personas, demo_version, fake_openai
):
    endpoint = endpoint_save(
        endpoint=None,
        name="own-server",
        route="openai",
        base_url=fake_openai.url,
        model="demo-model",
        description="",
        actor=personas.ml_engineer,
    )
    with celery_worker(extra_env={"OPENAI_API_KEY": WORKER_KEY}):
        job = run_in_playground(
            client_for(personas.reviewer), version=demo_version, endpoint=endpoint
        )
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail
    assert fake_openai.authorizations, "the playground called the server"
    assert all(WORKER_KEY not in header for header in fake_openai.authorizations), (
        fake_openai.authorizations
    )


def test_a_training_command_gets_an_allow_listed_environment(monkeypatch):
    for name, value in {
        "OPENAI_API_KEY": WORKER_KEY,
        "SECRET_KEY": "s" * 50,
        "DATABASE_URL": "postgres://u:p@h/db",
        "REDIS_URL": "redis://:pw@127.0.0.1:6379/0",
        "ENDPOINT_SECRETS_KEY": "k",
        "HF_TOKEN": "hf_x",
        "OMP_NUM_THREADS": "1",
    }.items():
        monkeypatch.setenv(name, value)
    printer = f'{sys.executable} -c \'import os; print("ENV " + " ".join(sorted(os.environ)))\''
    code, lines = run_command(
        ["training", "--help"], log=lambda line: None, on_tick=lambda: None, launcher=printer
    )
    seen = next(line for line in lines if line.startswith("ENV ")).split()[1:]
    assert code == 0
    assert "OMP_NUM_THREADS" in seen and "PATH" in seen and "PYTHONPATH" in seen
    for secret in (
        "OPENAI_API_KEY",
        "SECRET_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "ENDPOINT_SECRETS_KEY",
        "HF_TOKEN",
    ):
        assert secret not in seen
