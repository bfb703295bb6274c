"""Browser test fixtures: headless Debian chromium through Playwright, against live_server.

Playwright's sync API runs an event loop in the test thread, so Django's ORM
must be told that synchronous calls there are fine (DJANGO_ALLOW_ASYNC_UNSAFE).
"""

from __future__ import annotations

import os
import shutil

import pytest

from tests import artefacts
from tests.personas import PASSWORD, fast_passwords, make_personas  # noqa: F401  (fast_passwords: an autouse fixture)

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail("Debian's chromium is not installed (scripts/bootstrap.sh installs it)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=executable, headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture
def people(transactional_db):
    """tests/personas.py's personas by role (olivia, rafael, mei, ada the admin, oscar), committed
    so that the live server and the workers see them."""
    from studio.mcpservers.services import mcp_server_ensure_demo

    mcp_server_ensure_demo()  # as the demo set-up does: the demo Harness names this server
    return {role: user for role, user in make_personas().by_role().items() if user is not None}


@pytest.fixture
def demo(people):
    from harness import demo_harness_dir, load_dir
    from studio.harnesses.services import harness_import

    return harness_import(
        files=load_dir(demo_harness_dir()).files, author=people["operator"], message="demo"
    ).version


@pytest.fixture
def replay_cases(tmp_path_factory):
    """replay_cases(n) -> a replay case file holding the first n cases of a generated world's replay
    set."""
    return lambda n: artefacts.replay_cases(tmp_path_factory, n)


@pytest.fixture
def sign_in(browser, live_server):
    """sign_in(username) -> a Playwright page signed in as that user, in its own browser context."""
    contexts = []

    def _sign_in(username: str):
        context = browser.new_context(base_url=live_server.url)
        context.set_default_timeout(30000)
        contexts.append(context)
        page = context.new_page()
        page.goto("/accounts/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_load_state()
        return page

    yield _sign_in
    for context in contexts:
        context.close()


@pytest.fixture
def inline_jobs(settings):
    """Evaluation and diagnosis jobs run in the test's thread (Celery eager), before pages open."""
    from studio.celery import app as celery_app

    settings.JOB_HEARTBEAT_S = 3600  # the job runs in this thread: no second connection beside it
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous
