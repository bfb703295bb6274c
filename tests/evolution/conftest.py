"""Evolution test fixtures: the studio personas, the demo Harness, a small seeded dataset.

Personas as in tests/studio: Olivia the operator, Rafael the reviewer, Mei the
ML engineer, Ada the admin and Oscar the outsider (signed in, no role).
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.contrib.auth.models import User

from harness import demo_harness_dir, read_dir
from studio.accounts.roles import ADMIN, ML_ENGINEER, OPERATOR, REVIEWER
from studio.accounts.services import user_create
from studio.celery import app as celery_app

PASSWORD = "correct horse battery staple"


@dataclass
class Personas:
    operator: User
    reviewer: User
    ml_engineer: User
    admin: User
    outsider: User

    def by_role(self) -> dict[str, User | None]:
        return {"operator": self.operator, "reviewer": self.reviewer, "ml_engineer": self.ml_engineer,
                "admin": self.admin, "outsider": self.outsider, "anonymous": None}


@pytest.fixture(autouse=True)
def _fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _eager_jobs(request, settings):
    """Jobs run inline in unit tests; tests marked `services` or `browser` use a real worker."""
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
    return Personas(
        operator=user_create(username="olivia", password=PASSWORD, roles=[OPERATOR]),
        reviewer=user_create(username="rafael", password=PASSWORD, roles=[REVIEWER]),
        ml_engineer=user_create(username="mei", password=PASSWORD, roles=[ML_ENGINEER]),
        admin=user_create(username="ada", password=PASSWORD, roles=[ADMIN]),
        outsider=user_create(username="oscar", password=PASSWORD, roles=[]),
    )


@pytest.fixture(scope="session")
def demo_sets_dir(tmp_path_factory):
    """The seeded demo sets, generated once per test session."""
    from evaluation.world.sets import generate

    folder = tmp_path_factory.mktemp("evolution-sets")
    generate(out=folder, seed=7)
    return folder


@pytest.fixture(scope="session")
def defect_files():
    """The demo Harness without the price grounding: item_qa's fetch-before-facts rule and the
    price-needs-tool and numbers-grounded hooks."""
    from evaluation.diagnosis.edits import ChangeSkillRule, apply_edits

    files, _ = read_dir(demo_harness_dir())
    files, _ = apply_edits(files, [ChangeSkillRule(skill="item_qa", rule_id="fetch-before-facts", text="")])
    lines = files["hooks.yaml"].split("\n")
    for hook_id in ("price-needs-tool", "numbers-grounded"):
        start = lines.index(f"  - id: {hook_id}")
        end = start + 1
        while end < len(lines) and not lines[end].startswith("  - id:"):
            end += 1
        lines = lines[:start] + lines[end:]
    files["hooks.yaml"] = "\n".join(lines)
    return files
