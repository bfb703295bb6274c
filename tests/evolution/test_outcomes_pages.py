"""Headlines that tell the truth: how requests ended, beside the scores, on run, stage and job
pages.

A run where every case ended in the Harness's fallback reply warns on its headline; a cancelled
run's badge says cancelled; an evaluation job's title stops saying "(0/N done)" once it has ended; a
job that ran shows "ran" and, apart from it, what the agent did.
"""

import json

import pytest
from evolution_testing import client_for, small_world

from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import EvalRun
from studio.evolution.services.runs import eval_run_start
from studio.jobs.models import Job
from studio.jobs.services import job_cancel

pytestmark = pytest.mark.django_db


def _run(
    personas,
    demo_sets_dir,
    files,
    tmp_path,
    *,
    fallback: bool,
    django_capture_on_commit_callbacks,
    size: int = 6,
) -> EvalRun:
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=files, actor=personas.admin, size=size, tmp_path=tmp_path
    )
    # a model that never loads a reply skill: the stop gate's retries run out, every case falls back
    if fallback:
        script = tmp_path / "chatter.json"
        script.write_text(
            json.dumps(
                {
                    c: ["Hello there, lovely to see you all!"] * 8
                    for c in dataset.cases.values_list("case_id", flat=True)
                }
            )
        )
        endpoint = ModelEndpoint.objects.create(
            name="chatter", route=ModelEndpoint.SCRIPTED, script_path=str(script)
        )
    with django_capture_on_commit_callbacks(execute=True):
        run = eval_run_start(
            version=version,
            dataset=dataset,
            endpoint=endpoint,
            case_ids=list(dataset.cases.values_list("case_id", flat=True)),
            actor=personas.operator,
        )
    return EvalRun.objects.select_related("job").get(pk=run.pk)


def test_a_run_that_only_fell_back_says_so_on_its_headline(
    personas, demo_sets_dir, demo_files, tmp_path, django_capture_on_commit_callbacks
):
    run = _run(
        personas,
        demo_sets_dir,
        demo_files,
        tmp_path,
        fallback=True,
        django_capture_on_commit_callbacks=django_capture_on_commit_callbacks,
    )
    assert run.status == EvalRun.SUCCEEDED
    outcomes = run.summary["outcomes"]
    assert outcomes["fallback"] == outcomes["n"] == 6 and run.summary["mostly_fallback"]
    page = client_for(personas.reviewer).get(f"/evolution/runs/{run.pk}/").content.decode()
    assert f'id="mostly-fallback-{run.pk}"' in page
    assert "6 of 6 cases fell back to the Harness&#x27;s fallback reply" in page
    assert 'data-outcome="fallback">fallback <strong>6</strong>' in page
    assert 'data-outcome="replied">replied <strong>0</strong>' in page
    chart = page.split('id="run-chart-data" type="application/json">', 1)[1].split("</script>", 1)[
        0
    ]
    data = json.loads(chart)
    assert data["outcomes"]["labels"][:2] == ["replied and effective", "replied, not effective"]
    assert (
        dict(zip(data["outcomes"]["labels"], data["outcomes"]["counts"], strict=True))["fallback"]
        == 6
    )
    assert set(data["categories"]["labels"]) == set(run.summary["per_category"])
    job = client_for(personas.reviewer).get(f"/jobs/{run.job_id}/").content.decode()
    assert "6 of 6 cases fell back to the Harness&#x27;s fallback reply" in job
    assert f"(0/{run.total} done)" not in job and f"({run.total}/{run.total} scored)" in job
    assert 'id="job-state">ran</span>' in job
    listing = client_for(personas.reviewer).get("/jobs/").content.decode()
    assert (
        "(0/6 done)" not in listing
        and 'Mostly fallback</span> <span class="small">6 of 6 cases fell back' in listing
    )


def test_a_run_that_replied_shows_its_outcomes_without_the_warning(
    personas, demo_sets_dir, defect_files, tmp_path, django_capture_on_commit_callbacks
):
    run = _run(
        personas,
        demo_sets_dir,
        defect_files,
        tmp_path,
        fallback=False,
        django_capture_on_commit_callbacks=django_capture_on_commit_callbacks,
    )
    page = client_for(personas.operator).get(f"/evolution/runs/{run.pk}/").content.decode()
    assert "mostly-fallback" not in page
    replied = run.summary["outcomes"]["replied"]
    assert replied > 0 and f'data-outcome="replied">replied <strong>{replied}</strong>' in page


def test_a_cancelled_run_is_badged_cancelled_not_failed(
    personas, demo_sets_dir, defect_files, tmp_path
):
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=4, tmp_path=tmp_path
    )
    run = eval_run_start(
        version=version,
        dataset=dataset,
        endpoint=endpoint,
        case_ids=list(dataset.cases.values_list("case_id", flat=True)),
        actor=personas.operator,
    )
    job_cancel(job=run.job, actor=personas.operator)
    page = client_for(personas.operator).get(f"/evolution/runs/{run.pk}/").content.decode()
    assert '<span class="status status-cancelled">cancelled</span>' in page
    assert "status-failed" not in page
    job = client_for(personas.operator).get(f"/jobs/{run.job_id}/").content.decode()
    assert (
        "(0/4 done)" not in job
        and "(0/4 scored)" in job
        and 'id="job-state">cancelled</span>' in job
    )
    assert Job.objects.get(pk=run.job_id).status == Job.CANCELLED
