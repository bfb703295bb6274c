"""Playground: a request runs as a job under a version and a policy; the page shows each step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from studio_testing import client_for

from studio.endpoints.services import endpoint_save
from studio.jobs.models import Job
from studio.playground.examples import example_request, examples

pytestmark = pytest.mark.django_db
SCRIPT = Path(__file__).parent / "testdata" / "price.script.json"


@pytest.fixture
def scripted_endpoint(personas):
    return endpoint_save(
        endpoint=None,
        name="scripted-price",
        route="scripted",
        base_url="",
        model="",
        description="",
        actor=personas.ml_engineer,
        script_path=str(SCRIPT),
    )


def _to_production(personas, version):
    from studio.harnesses.services import label_move

    label_move(
        harness=version.harness,
        name="production",
        version=version,
        actor=personas.reviewer,
        reason="the shipped demo",
    )


def test_a_playground_run_shows_the_trajectory_step_by_step(
    personas, demo_version, scripted_endpoint, django_capture_on_commit_callbacks
):
    client = client_for(personas.operator)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/playground/",
            {
                "version": demo_version.pk,
                "endpoint": scripted_endpoint.pk,
                "comment": "How much is product #3?",
                "request_json": '{"id": "pg", "comments": ["x"], "room": '
                '{"current_link_id": 1, "shelf": [1, 2, 3, 4, 5]}}',
            },
            follow=True,
        )
    job = Job.objects.get(kind="playground_run")
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail
    page = (
        response.content.decode()
        if job.is_active
        else client.get(f"/jobs/{job.pk}/").content.decode()
    )
    assert "Link 3 is the Sunscreen SPF50, currently 89 yuan." in page
    assert "tool get_product_info_by_link_id" in page and "load skill item_qa" in page
    assert "model call (round 1)" in page and "hook " in page
    assert "Prompt blocks" in page and "Assembled system prompt" in page
    assert 'id="trajectory-timings"' in page and "total " in page
    # the steps appear in the order they happened
    assert page.index("tool get_product_info_by_link_id") < page.index("load skill item_qa")


def test_a_bad_request_is_refused_with_the_field_named(personas, demo_version, scripted_endpoint):
    response = client_for(personas.operator).post(
        "/playground/",
        {
            "version": demo_version.pk,
            "endpoint": scripted_endpoint.pk,
            "request_json": '{"comments": [], "room": {"current_link_id": 0}}',
        },
    )
    page = response.content.decode()
    assert response.status_code == 200 and "comments" in page and "current_link_id" in page
    assert not Job.objects.exists()


def test_the_form_preselects_the_production_version_and_a_post_without_choices_uses_the_defaults(
    personas, demo_version, demo_files, scripted_endpoint, django_capture_on_commit_callbacks
):
    from studio.harnesses.services import harness_version_create

    client = client_for(personas.operator)
    # a newer version that is not at production (the demo's planted defect is one): listed first,
    # but the page pre-selects the version viewers are served, and says which is which
    files = dict(demo_files)
    skill = next(path for path in sorted(files) if path.endswith(".md") and "skills/" in path)
    files[skill] += "\n- A later line.\n"
    newer = harness_version_create(
        harness=demo_version.harness,
        files=files,
        author=personas.operator,
        message="a later version",
        parent=demo_version,
    )
    _to_production(personas, demo_version)
    page = client.get("/playground/").content.decode()
    assert (
        f'<option value="{demo_version.pk}" selected>{demo_version.harness.name} '
        f"v{demo_version.number} (production)</option>" in page
    ), page[page.find('name="version"') :][:600]
    assert f'<option value="{newer.pk}" >' in page
    # a POST naming neither (a script posting the form): the same defaults, not a 500 (the
    # default endpoint's id used to reach the text parser as a number)
    request_json = json.dumps(example_request(name="product_price"))
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/playground/", {"request_json": request_json})
    assert response.status_code == 302, response.content.decode()[:500]
    job = Job.objects.get(kind="playground_run")
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail
    assert job.params["endpoint_id"] == scripted_endpoint.pk
    assert job.params["version_id"] == demo_version.pk


def test_an_exploratory_budget_runs_under_it_and_says_it_is_no_score(
    personas, demo_version, scripted_endpoint, django_capture_on_commit_callbacks
):
    """Issue 29, item 6: a longer budget, clearly labelled, for what a slow model would have
    said."""
    client = client_for(personas.operator)
    form = {
        "version": demo_version.pk,
        "endpoint": scripted_endpoint.pk,
        "comment": "How much is product #3?",
        "request_json": '{"id": "pg", "comments": ["x"], "room": '
        '{"current_link_id": 1, "shelf": [1, 2, 3]}}',
    }
    for bad in ("0", "301", "ten", "1e3", "²"):
        refused = client.post("/playground/", {**form, "budget_s": bad}).content.decode()
        assert "budget_s: " in refused and "whole number of seconds from 1 to 300" in refused, bad
    assert not Job.objects.exists()
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/playground/", {**form, "budget_s": "60"}, follow=True)
    job = Job.objects.get(kind="playground_run")
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail
    assert job.title.endswith("(exploratory budget 60 s): How much is product #3?")
    assert job.result["trajectory"]["settings"]["trajectory_budget_s"] == 60
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert (
        'id="trajectory-exploratory"' in page
        and "a budget of 60 s instead of the Harness's 10 s" in page
    )
    assert "Not a score." in page
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/playground/", form, follow=True)  # empty: the Harness's own budget, no label
    plain = Job.objects.filter(kind="playground_run").latest("pk")
    assert plain.result["trajectory"]["settings"]["trajectory_budget_s"] == 10
    assert 'id="trajectory-exploratory"' not in client.get(f"/jobs/{plain.pk}/").content.decode()


# --- issue 15: steps while the run goes, example requests on any endpoint, a dataset's catalogue
# -------------

ROLES_THAT_RUN = ["operator", "reviewer", "ml_engineer", "admin"]
SCARF = {
    "link_id": 42,
    "product_id": "SKU-4242",
    "name": "Silk Scarf",
    "category": "fashion",
    "price": 59.0,
    "stock": 12,
    "description": "A light silk scarf.",
}
CASE = {
    "id": "dev-scarf-1",
    "category": "product_qa",
    "comments": [{"user": "amy", "text": "How much is link 42?"}],
    "room": {"current_link_id": 42, "shelf": [1, 42]},
    "gold": {"route": "public"},
}
CASE_SCRIPT = [
    '<tool_call>{"name": "get_product_info_by_link_id", "arguments": {"link_id": 42}}</tool_call>',
    '<tool_call>{"name": "load_skill", "arguments": {"name": "item_qa"}}</tool_call>',
    "Link 42 is the Silk Scarf, 59 yuan.",
]


@pytest.fixture
def keyed_endpoint(personas, tmp_path):
    """A scripted endpoint keyed by request id, as the demo's dev-set script is (482 ids there)."""
    script = {f"dev-{i:04d}": ["Thanks!"] for i in range(482)} | {CASE["id"]: CASE_SCRIPT}
    path = tmp_path / "keyed.json"
    path.write_text(json.dumps(script))
    return endpoint_save(
        endpoint=None,
        name="scripted-keyed",
        route="scripted",
        base_url="",
        model="",
        description="",
        actor=personas.ml_engineer,
        script_path=str(path),
    )


@pytest.fixture
def scarf_dataset(personas):
    """A dataset whose catalogue has a product (link 42) the demo catalogue does not."""
    from harness.livestream import demo_catalogue
    from studio.evolution.models import Dataset, DatasetCase

    catalogue = demo_catalogue().to_dict()
    catalogue["products"].append(SCARF)
    dataset = Dataset.objects.create(
        name="scarves", catalogue=catalogue, case_count=1, created_by=personas.admin
    )
    DatasetCase.objects.create(
        dataset=dataset,
        case_id=CASE["id"],
        position=1,
        line=1,
        category="product_qa",
        comment="How much is link 42?",
        data=json.loads(json.dumps(CASE)),
    )
    return dataset


def run_in_playground(client, capture, **form):
    with capture(execute=True):
        response = client.post("/playground/", form)
    return response


@pytest.mark.parametrize("role", ROLES_THAT_RUN)
def test_every_role_sees_every_example_and_the_dataset_catalogues(
    personas, demo_version, scarf_dataset, role
):
    page = client_for(personas.by_role()[role]).get("/playground/").content.decode()
    for name in [
        "product_price",
        "casual_chat",
        "aftersale",
        "multi_comment",
        "promotion",
        "faq",
        "clarification",
        "change_order",
        "silent_refusal",
    ]:
        assert f'href="?example={name}"' in page
    assert "demo catalogue (the examples)" in page and "dataset scarves (1 cases)" in page


def test_the_outsider_and_the_anonymous_cannot_open_the_playground(personas):
    assert client_for(personas.outsider).get("/playground/").status_code == 403
    assert client_for(None).get("/playground/").status_code == 302


@pytest.mark.parametrize("role", ROLES_THAT_RUN)
def test_a_keyed_scripted_endpoint_runs_the_example_requests(
    personas, demo_version, keyed_endpoint, role, django_capture_on_commit_callbacks
):
    """Before: 'the script has no outputs for request ...; it has' and 482 case ids, the agent fell
    back."""
    client = client_for(personas.by_role()[role])
    form = client.get("/playground/?example=product_price").content.decode()
    assert "product-price-001" in form
    run_in_playground(
        client,
        django_capture_on_commit_callbacks,
        version=demo_version.pk,
        endpoint=keyed_endpoint.pk,
        request_json=json.dumps(example_request(name="product_price")),
    )
    job = Job.objects.get(kind="playground_run")
    trajectory = job.result["trajectory"]
    assert (job.status, trajectory["outcome"]) == (Job.SUCCEEDED, "replied"), trajectory[
        "outcome_reason"
    ]
    assert "Sunscreen SPF50" in trajectory["reply"]


def test_every_example_request_runs_on_the_keyed_scripted_endpoint(
    personas, demo_version, keyed_endpoint, django_capture_on_commit_callbacks
):
    client = client_for(personas.operator)
    for name in examples():
        run_in_playground(
            client,
            django_capture_on_commit_callbacks,
            version=demo_version.pk,
            endpoint=keyed_endpoint.pk,
            request_json=json.dumps(example_request(name=name)),
        )
    outcomes = {
        job.params["request"]["id"]: job.result["trajectory"]["outcome"]
        for job in Job.objects.filter(kind="playground_run")
    }
    assert len(outcomes) == 9
    assert outcomes.pop("silent-refusal-001") == "silent"
    assert set(outcomes.values()) == {"replied"}


def test_a_request_the_script_cannot_answer_is_refused_in_one_line(
    personas, demo_version, keyed_endpoint
):
    response = client_for(personas.operator).post(
        "/playground/",
        {
            "version": demo_version.pk,
            "endpoint": keyed_endpoint.pk,
            "comment": "Is link 2 in stock?",
        },
    )
    page = response.content.decode()
    assert (
        "endpoint: scripted-keyed replays a script with no "
        "outputs for request &#x27;playground-comment&#x27;; "
        "it answers the 9 example requests and 483 request ids (dev-0000, "
        "dev-0001, dev-0002, ...). Pick an example request or a case of "
        "the script&#x27;s dataset, or a model endpoint"
    ) in page
    assert "dev-0003" not in page and not Job.objects.exists()


@pytest.mark.parametrize("role", ROLES_THAT_RUN)
def test_a_pasted_dataset_case_runs_with_its_datasets_catalogue(
    personas, demo_version, keyed_endpoint, scarf_dataset, role, django_capture_on_commit_callbacks
):
    """Before: link 42 was refused, checked against the demo catalogue."""
    client = client_for(personas.by_role()[role])
    refused = client.post(
        "/playground/",
        {
            "version": demo_version.pk,
            "endpoint": keyed_endpoint.pk,
            "request_json": json.dumps(CASE),
        },
    ).content.decode()
    assert "room.shelf[1]: no product with link id 42 in the catalogue" in refused
    assert "case dev-scarf-1 is in dataset scarves: choose it as the catalogue" in refused
    assert not Job.objects.exists()

    run_in_playground(
        client,
        django_capture_on_commit_callbacks,
        version=demo_version.pk,
        endpoint=keyed_endpoint.pk,
        dataset=scarf_dataset.pk,
        request_json=json.dumps(CASE),
    )
    job = Job.objects.get(kind="playground_run")
    assert job.status == Job.SUCCEEDED, job.error + job.log_tail
    assert job.result["trajectory"]["reply"] == "Link 42 is the Silk Scarf, 59 yuan."
    assert job.result["trajectory"]["tool_calls"][0]["result"]["name"] == "Silk Scarf"
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "catalogue of scarves" in page and "Link 42 is the Silk Scarf, 59 yuan." in page


def test_a_case_picked_by_id_fills_the_form_and_runs(
    personas, demo_version, keyed_endpoint, scarf_dataset, django_capture_on_commit_callbacks
):
    client = client_for(personas.reviewer)
    form = client.get(f"/playground/?dataset={scarf_dataset.pk}&case=dev-scarf-1").content.decode()
    assert "How much is link 42?" in form and "&quot;gold&quot;" not in form
    missing = client.get(f"/playground/?dataset={scarf_dataset.pk}&case=dev-nope").content.decode()
    assert "case: dataset scarves has no case &#x27;dev-nope&#x27;" in missing
    no_dataset = client.post(
        "/playground/",
        {"version": demo_version.pk, "endpoint": keyed_endpoint.pk, "case": "dev-scarf-1"},
    ).content.decode()
    assert "case: choose the dataset the case is in" in no_dataset
    run_in_playground(
        client,
        django_capture_on_commit_callbacks,
        version=demo_version.pk,
        endpoint=keyed_endpoint.pk,
        dataset=scarf_dataset.pk,
        case="dev-scarf-1",
    )
    job = Job.objects.get(kind="playground_run")
    assert job.result["trajectory"]["reply"] == "Link 42 is the Silk Scarf, 59 yuan."
    assert job.params["dataset_id"] == scarf_dataset.pk


def test_the_job_page_shows_the_steps_while_the_run_goes(
    personas, demo_version, scripted_endpoint, monkeypatch, django_capture_on_commit_callbacks
):
    """Before: the page sat at 30% with no steps until the run ended."""
    from studio.playground import services

    watcher = client_for(personas.reviewer)  # another role watching the operator's run
    seen = []
    store = services.playground_steps_store

    def store_and_look(*, job_id, result):
        store(job_id=job_id, result=result)
        seen.append(
            (
                Job.objects.get(pk=job_id).progress,
                watcher.get(f"/jobs/{job_id}/status/").content.decode(),
            )
        )

    monkeypatch.setattr(services, "playground_steps_store", store_and_look)
    run_in_playground(
        client_for(personas.operator),
        django_capture_on_commit_callbacks,
        version=demo_version.pk,
        endpoint=scripted_endpoint.pk,
        comment="How much is product #3?",
        request_json="",
    )
    job = Job.objects.get(kind="playground_run")
    assert job.status == Job.SUCCEEDED
    first_tool = next(page for _, page in seen if "tool get_product_info_by_link_id" in page)
    assert 'id="trajectory-running"' in first_tool and "running</span> round 1" in first_tool
    assert "currently 89 yuan" not in first_tool and "load skill item_qa" not in first_tool
    assert [p for p, _ in seen] == sorted(p for p, _ in seen) and seen[-1][0] > 30
    final = watcher.get(f"/jobs/{job.pk}/status/").content.decode()
    assert (
        "trajectory-running" not in final
        and "Link 3 is the Sunscreen SPF50, currently 89 yuan." in final
    )


def test_a_run_cancelled_mid_way_keeps_the_steps_it_recorded(
    personas, demo_version, scripted_endpoint, monkeypatch, django_capture_on_commit_callbacks
):
    from django.utils import timezone

    from studio.playground import services

    store = services.playground_steps_store

    def store_then_cancel(*, job_id, result):
        store(job_id=job_id, result=result)
        if result["trajectory"]["tool_calls"]:
            Job.objects.filter(pk=job_id).update(
                cancel_requested_at=timezone.now(), cancelled_by=personas.operator
            )

    monkeypatch.setattr(services, "playground_steps_store", store_then_cancel)
    client = client_for(personas.operator)
    run_in_playground(
        client,
        django_capture_on_commit_callbacks,
        version=demo_version.pk,
        endpoint=scripted_endpoint.pk,
        comment="How much is product #3?",
        request_json="",
    )
    job = Job.objects.get(kind="playground_run")
    assert job.status == Job.CANCELLED
    assert len(job.result["trajectory"]["model_calls"]) == 1  # stopped at the step after the cancel
    page = client.get(f"/jobs/{job.pk}/").content.decode()
    assert (
        "cancelled</span> the run ended before a reply" in page
        and "tool get_product_info_by_link_id" in page
    )


def test_a_worker_process_warms_the_default_local_endpoint_on_the_production_version(
    personas, demo_version, scripted_endpoint
):
    from harness.model_cache import tiny_model_dir
    from studio.playground.services import playground_warm_up

    assert playground_warm_up() == "nothing to warm: no endpoint or no version at production yet"
    _to_production(personas, demo_version)
    # a scripted (or remote) endpoint has no model in this process to warm
    assert playground_warm_up() == "not warmed: scripted-price is not a local model"
    endpoint_save(
        endpoint=None,
        name="local-default",
        route="local",
        base_url="",
        model=str(tiny_model_dir()),
        description="",
        actor=personas.ml_engineer,
    )
    said = playground_warm_up()
    assert said.startswith(f"warmed local-default on {demo_version}: "), said
    # the whole first-round prompt went through the model: the Harness's ~1,600 tokens
    assert int(said.split(": ")[1].split(" prompt tokens")[0]) > 1000


def test_the_warm_up_starts_with_a_worker_process_only_where_the_setting_says_so(
    settings, monkeypatch
):
    import threading

    from celery.signals import worker_process_init

    from studio.playground import services

    done = threading.Event()
    monkeypatch.setattr(services, "playground_warm_up", lambda: done.set() or "warmed")
    settings.WARM_UP_WORKER = False
    worker_process_init.send(sender=None)
    assert not done.wait(0.5)
    settings.WARM_UP_WORKER = True
    worker_process_init.send(sender=None)  # as a Celery worker's new process does
    assert done.wait(10)
