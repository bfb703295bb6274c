"""The one-line outcome of a finished run says what it trained, counted right (issue 29, item 9)."""

from studio.training.job_kinds import run_outcome


def test_steps_are_counted_in_words_and_a_pipeline_names_its_last_stage():
    card = {"steps": 1, "stage": "rl"}
    assert (
        run_outcome({"kind": "sft", "summary": {"model_card": card}})
        == "trained 1 step (rl): model in final/"
    )
    assert run_outcome({"kind": "pipeline", "summary": {"model_card": card}}) == (
        "pipeline finished; its last stage (rl) trained 1 step: model in final/"
    )
    assert run_outcome(
        {"kind": "sft", "summary": {"model_card": {"steps": 4, "stage": "sft"}}}
    ).startswith("trained 4 steps (sft)")


def test_an_endpoint_test_says_its_result_in_words_not_as_a_python_dict(db, personas):
    from studio_testing import client_for

    from studio.jobs.models import Job

    job = Job.objects.create(
        kind="endpoint_test",
        title="Endpoint connection test",
        status=Job.SUCCEEDED,
        params={},
        result={"ok": True, "message": "local-smollm: answered 'ok' in 0.4 s"},
    )
    page = client_for(personas.operator).get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="endpoint-test-result"' in page and "answered &#x27;ok&#x27; in 0.4 s" in page
    assert "{&#x27;ok&#x27;: True" not in page
