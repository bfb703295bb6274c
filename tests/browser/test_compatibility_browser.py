"""A Harness version that renames the tools the model relies on, from the browser, against a real
Celery worker.

The production endpoint is a scripted model keyed on the demo Harness's tool names (trained, as its
release says, on v1). An operator stages v2, which renames the tools: the label move queues the job
that asks for its cells, the worker scores them, and the matrix shows the production model's cell on
v2 worse than the production pair, with its interval. The reviewer's promotion is refused by the
compatibility gate until an override is written; once production runs v2 the ML engineer's training
page raises the retrain alarm.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.services]


@pytest.fixture
def renamed(demo, people, settings, tmp_path):
    from harness import load_mapping
    from harness.augment import augment_bundle
    from studio.compatibility.models import LabelServer
    from studio.compatibility.testing import released_checkpoint, source_dataset
    from studio.endpoints.models import ModelEndpoint
    from studio.evolution.scripted import write_script
    from studio.harnesses.selectors import version_files
    from studio.harnesses.services import harness_version_create

    settings.COMPATIBILITY_CASES = 9  # 9 cases + 9 under variants per cell
    source = source_dataset(30)
    script = write_script(
        cases=[c.data for c in source.cases.all()], path=tmp_path / "name-keyed.json"
    )
    model = ModelEndpoint.objects.create(
        name="name-keyed", route=ModelEndpoint.SCRIPTED, script_path=str(script)
    )
    files = dict(
        augment_bundle(
            bundle=load_mapping(version_files(version=demo)), seed=3, dims=["tools"]
        ).bundle.files
    )
    v2 = harness_version_create(
        harness=demo.harness,
        files=files,
        author=people["operator"],
        message="tools renamed",
        parent=demo,
    )
    LabelServer.objects.create(harness=demo.harness, label="production", endpoint=model)
    released_checkpoint(
        version=demo, folder=tmp_path / "trained", decided_by=people["reviewer"]
    )  # trained on v1
    return demo, v2


def test_a_tool_rename_is_worse_refused_and_raises_the_retrain_alarm(renamed, people, sign_in):
    from studio.harnesses.services import label_move
    from studio.jobs.testing import celery_worker

    v1, v2 = renamed
    with celery_worker(
        extra_env={"COMPATIBILITY_CASES": "9"}
    ):  # the web's set: the worker asks for its cells
        label_move(
            harness=v1.harness,
            name="production",
            version=v1,
            actor=people["reviewer"],
            reason="live",
        )
        operator = sign_in("olivia")
        operator.goto("/h/livestream-avatar/v/2/")
        operator.fill("#label-form input[name=label]", "staging")
        operator.click("#label-form button")
        expect(operator.locator(".msg-success")).to_contain_text(
            "staging now points at v2", timeout=30_000
        )

        operator.click("text=Compatibility")
        cell = operator.locator('tr[data-endpoint=name-keyed] td[data-version="2"]')
        expect(cell).to_have_attribute(
            "data-verdict", "worse", timeout=120_000
        )  # the page polls while cells run
        expect(cell).to_contain_text("worse: -")
        expect(cell).to_contain_text("vs production")
        expect(
            operator.locator('tr[data-endpoint=name-keyed] td[data-version="1"]')
        ).to_contain_text("the production pair")

        reviewer = sign_in("rafael")
        reviewer.goto("/h/livestream-avatar/v/2/")
        reviewer.fill("#label-form input[name=label]", "production")
        reviewer.fill("#label-form input[name=reason]", "new tool names")
        reviewer.click("#label-form button")
        expect(reviewer.locator(".msg-error")).to_contain_text(
            "compatibility: fail (worse than the production pair", timeout=30_000
        )
        reviewer.fill("#label-form input[name=label]", "production")
        reviewer.fill("#label-form input[name=reason]", "new tool names")
        reviewer.fill(
            "#label-form input[name=override_reason]", "the retrain on v2 is booked for tonight"
        )
        reviewer.click("#label-form button")
        expect(reviewer.locator(".msg-success")).to_contain_text(
            "production now points at v2", timeout=30_000
        )

        engineer = sign_in("mei")
        engineer.goto("/training/")
        alarm = engineer.locator("#retrain-alarm-livestream-avatar")
        expect(alarm).to_contain_text(
            "name-keyed has fallen behind livestream-avatar", timeout=30_000
        )
        expect(alarm).to_contain_text("the version it was trained on")
        engineer.click("#retrain-livestream-avatar")
        expect(engineer.locator("input[name=harness]")).to_have_value("livestream-avatar@v2")
