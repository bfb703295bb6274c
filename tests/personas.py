"""The studio's test personas and the fixtures every studio-side test package shares.

Personas (as in healthchecks' hc/test.py): Olivia the operator, Rafael the
reviewer, Mei the ML engineer, Ada the admin and Oscar the outsider, who is
signed in but holds no role. A package's conftest re-exports the fixtures it
uses: ``from tests.personas import personas, fast_passwords, eager_jobs``; the demo Harness
imported as v1 (``demo_files``, ``demo_version``) is shared the same way; ``personas``
also registers the demo's MCP server, as the demo set-up does.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User

PASSWORD = "correct horse battery staple"


@dataclass
class Personas:
    operator: User
    reviewer: User
    ml_engineer: User
    admin: User
    outsider: User

    def by_role(self) -> dict[str, User | None]:
        return {
            "operator": self.operator,
            "reviewer": self.reviewer,
            "ml_engineer": self.ml_engineer,
            "admin": self.admin,
            "outsider": self.outsider,
            "anonymous": None,
        }


def make_personas() -> Personas:
    from studio.accounts.roles import ADMIN, ML_ENGINEER, OPERATOR, REVIEWER
    from studio.accounts.services import user_create

    return Personas(
        operator=user_create(username="olivia", password=PASSWORD, roles=[OPERATOR]),
        reviewer=user_create(username="rafael", password=PASSWORD, roles=[REVIEWER]),
        ml_engineer=user_create(username="mei", password=PASSWORD, roles=[ML_ENGINEER]),
        admin=user_create(username="ada", password=PASSWORD, roles=[ADMIN]),
        outsider=user_create(username="oscar", password=PASSWORD, roles=[]),
    )


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def eager_jobs(request, settings):
    """Jobs run inline in unit tests; tests marked `services` or `browser` use a real worker."""
    from studio.celery import app as celery_app

    eager = "services" not in request.keywords and "browser" not in request.keywords
    if eager:
        # an inline job runs inside the test's transaction, where the heartbeat thread's own
        # connection would wait on SQLite's write lock until the job ends: keep it asleep
        settings.JOB_HEARTBEAT_S = 3600
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = eager
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture
def personas(db) -> Personas:
    """The personas, in a studio where the demo set-up registered the marketing MCP server (as
    seed_demo does): the demo Harness names it, and an unregistered server is refused."""
    from studio.mcpservers.services import mcp_server_ensure_demo

    mcp_server_ensure_demo()
    return make_personas()


@pytest.fixture(scope="session")
def demo_files() -> dict[str, str]:
    from harness import demo_harness_dir, load_dir

    return dict(load_dir(demo_harness_dir()).files)


@pytest.fixture
def demo_version(personas, demo_files):
    """The demo Harness imported as v1 by the admin."""
    from studio.harnesses.services import harness_import

    return harness_import(files=demo_files, author=personas.admin, message="demo").version
