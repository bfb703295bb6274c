"""The evolution pages through the Django client (jobs inline): import, stage flow, filters,
trajectory."""

import json

import pytest
from evolution_testing import client_for, small_world

from studio.evolution.models import Dataset, EvalRun, Evolution, Stage
from studio.harnesses.models import Label

pytestmark = pytest.mark.django_db


def test_import_names_every_bad_line_and_imports_nothing(personas):
    good = json.dumps(
        {
            "format": "hs-case/1",
            "id": "c1",
            "category": "chitchat",
            "comments": ["hi"],
            "gold": {"route": "public"},
        }
    )
    bad_json = "{not json"
    bad_category = json.dumps(
        {
            "format": "hs-case/1",
            "id": "c3",
            "category": "weather",
            "comments": ["hi"],
            "gold": {"route": "public"},
        }
    )
    from django.core.files.uploadedfile import SimpleUploadedFile

    upload = SimpleUploadedFile("mine.jsonl", "\n".join([good, bad_json, bad_category]).encode())
    page = (
        client_for(personas.operator)
        .post(
            "/evolution/datasets/import/", {"name": "mine", "cases": upload, "heldout_share": "0.2"}
        )
        .content.decode()
    )
    assert "Nothing was imported" in page
    assert "mine.jsonl:2: &lt;line&gt;: not valid JSON" in page
    assert "mine.jsonl:3: category: must be one of" in page
    assert not Dataset.objects.filter(name="mine").exists()

    upload = SimpleUploadedFile("mine.jsonl", good.encode())
    response = client_for(personas.operator).post(
        "/evolution/datasets/import/", {"name": "mine", "cases": upload, "heldout_share": "0.2"}
    )
    assert response.status_code == 302 and Dataset.objects.get(name="mine").case_count == 1
    page = client_for(personas.outsider).get("/evolution/datasets/mine/")
    assert page.status_code == 403


def test_a_stage_from_the_pages(
    personas, demo_sets_dir, defect_files, tmp_path, django_capture_on_commit_callbacks
):
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=30, tmp_path=tmp_path
    )
    operator, reviewer = client_for(personas.operator), client_for(personas.reviewer)
    page = operator.get(f"/evolution/datasets/{dataset.name}/?category=product_qa").content.decode()
    first_question = next(
        case["id"]
        for case in map(json.loads, (demo_sets_dir / "dev.jsonl").read_text().splitlines()[:30])
        if case["category"] == "product_qa"
    )
    assert first_question in page and "chitchat</td>" not in page

    with django_capture_on_commit_callbacks(execute=True):
        response = operator.post(
            "/evolution/new/",
            {
                "name": "prices",
                "version": version.pk,
                "dataset": dataset.name,
                "endpoint": endpoint.pk,
                "diagnoser": "rule-based",
                "tolerance": "0.05",
                "categories": "",
            },
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    stage = Stage.objects.get()
    page = operator.get(response.url).content.decode()
    assert 'data-status="succeeded"' in page and 'id="diagnose"' in page

    run = stage.parent_run
    page = operator.get(f"/evolution/runs/{run.pk}/?reason=unsupported_price").content.decode()
    rows = page.count("<tr data-case=")
    assert rows == run.results.filter(reason_codes__contains=",unsupported_price,").count() > 0
    failed_case = run.results.filter(reason_codes__contains=",unsupported_price,").first().case_id
    page = operator.get(f"/evolution/runs/{run.pk}/cases/{failed_case}/").content.decode()
    assert (
        "unsupported_price" in page
        and 'id="trajectory"' in page
        and "get_product_info_by_link_id" in page
    )

    with django_capture_on_commit_callbacks(execute=True):
        operator.post(f"/evolution/stages/{stage.pk}/diagnose/")
    page = operator.get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert (
        "by rule-based" in page
        and "Prices stated without a tool result" in page
        and "+    type: require_tool_before_claim" in page
    )
    assert 'class="primary accept"' not in page  # operators cannot accept
    proposal = stage.diagnoses.get().proposals.get(index=0)
    assert (
        reviewer.post(
            f"/evolution/proposals/{proposal.pk}/review/", {"action": "accept"}
        ).status_code
        == 302
    )
    with django_capture_on_commit_callbacks(execute=True):
        reviewer.post(f"/evolution/stages/{stage.pk}/candidate/", {"message": ""})
    stage.refresh_from_db()
    assert stage.candidate_run.status == EvalRun.SUCCEEDED
    page = reviewer.get(f"/evolution/stages/{stage.pk}/").content.decode()
    assert (
        'id="regression-report"' in page
        and 'data-scope="product_qa"' in page
        and 'id="decide"' in page
    )
    assert (
        ">Failing cases</th>" in page and "<th>Errors</th>" not in page
    )  # not run errors (issue 29, item 9)
    assert "no finished replay run of any model under livestream-avatar v" in page

    response = reviewer.post(
        f"/evolution/stages/{stage.pk}/decide/", {"decision": "promote_staging", "reason": "ok"}
    )
    assert Label.objects.get(name="staging").version_id == stage.candidate_version_id
    page = reviewer.get(f"/evolution/{stage.evolution_id}/").content.decode()
    assert "promote to staging" in page and 'id="record-chart"' in page
    chart = json.loads(
        page.split('id="record-chart-data" type="application/json">')[1].split("</script>")[0]
    )
    assert len(chart["labels"]) == 2 and chart["accuracy"][1] > chart["accuracy"][0]
    assert Evolution.objects.get().status == "active"
