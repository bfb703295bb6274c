"""The compatibility matrix through the test client, with each persona.

A scripted model keyed on the demo Harness's tool names serves production; v2 renames the tools. A
label move asks for the cells it needs (jobs run inline here), a cell for the same inputs is never
computed again (the evaluation runs are counted), the matrix colours v2's cell worse with its
interval, the compatibility gate refuses v2's promotion without a written override, and once
production runs v2 the ML engineer sees the retrain alarm with its HSA-SFT link.
"""

from __future__ import annotations

import json

import pytest
from studio_testing import client_for, page_text

from studio.compatibility.models import Cell, LabelServer
from studio.compatibility.services import cells_for_checkpoint
from studio.compatibility.testing import released_checkpoint, source_dataset
from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import EvalRun
from studio.harnesses.models import Label
from studio.harnesses.services import StudioError, harness_version_create, label_move

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(personas, demo_version, demo_files, settings, tmp_path):
    """v1 at production, served by the name-keyed script; v2 (tools renamed) committed. No cell yet:
    the label moved before anything was asked (a test fills the cells with ``_fill``)."""
    from harness import load_mapping
    from harness.augment import augment_bundle
    from studio.evolution.scripted import write_script

    settings.COMPATIBILITY_CASES = 9
    source = source_dataset(40)
    script = write_script(
        cases=[c.data for c in source.cases.all()], path=tmp_path / "shortcut.json"
    )
    model = ModelEndpoint.objects.create(
        name="name-keyed", route=ModelEndpoint.SCRIPTED, script_path=str(script)
    )
    renamed = augment_bundle(bundle=load_mapping(demo_files), seed=3, dims=["tools"]).bundle
    v2 = harness_version_create(
        harness=demo_version.harness,
        files=dict(renamed.files),
        author=personas.operator,
        message="tools renamed",
        parent=demo_version,
    )
    LabelServer.objects.create(harness=demo_version.harness, label="production", endpoint=model)
    label_move(
        harness=demo_version.harness,
        name="production",
        version=demo_version,
        actor=personas.reviewer,
        reason="first",
    )
    return demo_version, v2, model


def _fill(world, personas, capture):
    """Stage v2 as the operator does; the label moves (production v1 again, then staging v2) fill
    their cells."""
    from studio.compatibility.services import cells_for_label

    v1, v2, _ = world
    with capture(execute=True):
        cells_for_label(harness_id=v1.harness_id, label="production")
    assert EvalRun.objects.count() == 1 and Cell.objects.get().version == v1  # the production pair
    with capture(execute=True):
        label_move(
            harness=v1.harness, name="staging", version=v2, actor=personas.operator, reason=""
        )


def test_a_label_fills_its_cells_once_and_the_matrix_shows_the_rename_worse(
    world, personas, django_capture_on_commit_callbacks
):
    v1, v2, model = world
    _fill(world, personas, django_capture_on_commit_callbacks)
    assert EvalRun.objects.count() == 2
    assert all(r.status == EvalRun.SUCCEEDED for r in EvalRun.objects.all())
    # the same inputs again, three ways: a label moved back and forth, and a person asking
    with django_capture_on_commit_callbacks(execute=True):
        label_move(
            harness=v1.harness, name="staging", version=v1, actor=personas.operator, reason=""
        )
        label_move(
            harness=v1.harness, name="staging", version=v2, actor=personas.operator, reason=""
        )
    asked = client_for(personas.operator).post(
        "/compatibility/cells/", {"endpoint": model.pk, "version": v2.pk}, follow=True
    )
    cell = Cell.objects.get(version=v2)
    assert f"evaluation run #{cell.run_id} (succeeded)" in page_text(asked)
    assert EvalRun.objects.count() == 2 and Cell.objects.count() == 2  # nothing was computed twice

    for role in ("operator", "reviewer", "ml_engineer", "admin"):
        response = client_for(personas.by_role()[role]).get("/compatibility/")
        assert response.status_code == 200
        assert ('id="ask-cell"' in response.content.decode()) == (
            role != "reviewer"
        )  # reviewers read
    html = response.content.decode()
    assert 'data-version="2" data-status="succeeded" data-verdict="worse"' in html
    assert 'data-version="1" data-status="succeeded" data-verdict="reference"' in html
    from studio.compatibility.selectors import cell_change

    cell.refresh_from_db()
    assert (
        cell.figures["avg"]["mean"] >= 0
    )  # kept on the row when its run scored (compatibility.signals)
    change = cell_change(cell=cell, reference=Cell.objects.get(version=v1))
    text = page_text(response)
    assert (
        f"worse: {change['avg']['delta']:.1f} [{change['avg']['low']:.1f}, "
        f"{change['avg']['high']:.1f}] vs production" in text
    )
    assert change["avg"]["high"] < 0 and "without fallback" in text
    assert f'href="/evolution/runs/{cell.run_id}/"' in html


def test_the_gate_refuses_the_rename_and_once_overridden_the_ml_engineer_sees_the_retrain_alarm(
    world, personas, tmp_path, django_capture_on_commit_callbacks
):
    from studio.gates import compatibility_gate
    from studio.promotion import production_promote

    v1, v2, _ = world
    released_checkpoint(
        version=v1, folder=tmp_path / "trained", decided_by=personas.reviewer
    )  # trained on v1
    assert compatibility_gate(version=v2).status == "no data"  # no cell yet: no data blocks
    _fill(world, personas, django_capture_on_commit_callbacks)
    gate = compatibility_gate(version=v2)
    assert (
        gate.status == "fail"
        and "worse than the production pair beyond the interval" in gate.detail
    )
    assert compatibility_gate(version=v1).status == "pass"
    with pytest.raises(StudioError, match="compatibility: fail"):
        production_promote(
            harness=v1.harness, version=v2, actor=personas.reviewer, reason="rename tools"
        )
    assert Label.objects.get(name="production").version == v1
    assert "worse than the production pair" in page_text(
        client_for(personas.reviewer).get(f"/h/{v1.harness.name}/v/2/")
    )
    mei = client_for(personas.ml_engineer)
    assert "Retrain alarm" not in page_text(mei.get("/training/"))  # production still runs v1

    runs = EvalRun.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        production_promote(
            harness=v1.harness,
            version=v2,
            actor=personas.reviewer,
            reason="rename tools",
            override_reason="the retrain is booked",
        )
    assert EvalRun.objects.count() == runs  # every cell the move needs exists already
    for page in ("/training/", "/training/checkpoints/", "/compatibility/"):
        text = page_text(mei.get(page))
        assert "Retrain alarm: name-keyed has fallen behind livestream-avatar." in text
        assert "the version it was trained on" in text
    html = mei.get("/training/").content.decode()
    assert "/training/new/sft/?preset=hsa-sft&amp;harness=livestream-avatar%40v2&amp;model=" in html
    form = mei.get("/training/new/sft/", {"preset": "hsa-sft", "harness": "livestream-avatar@v2"})
    assert form.status_code == 200 and "livestream-avatar@v2" in form.content.decode()
    operator = page_text(client_for(personas.operator).get("/compatibility/"))
    assert (
        "Retrain alarm" in operator and "Retrain: HSA-SFT" not in operator
    )  # operators read, do not train


def test_asking_for_a_cell_is_for_operators_and_ml_engineers(world, personas):
    v1, v2, model = world
    data = {"endpoint": model.pk, "version": v2.pk}
    for role in ("reviewer", "outsider"):
        assert (
            client_for(personas.by_role()[role]).post("/compatibility/cells/", data).status_code
            == 403
        )
    anonymous = client_for(None).post("/compatibility/cells/", data)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]
    assert not Cell.objects.filter(version=v2).exists()
    mei = client_for(personas.ml_engineer)
    bad = mei.post("/compatibility/cells/", {"endpoint": "abc", "version": v2.pk})
    assert bad.status_code == 400 and "endpoint: expected a whole number" in bad.content.decode()
    gone = mei.post("/compatibility/cells/", {"endpoint": model.pk + 1000, "version": v2.pk})
    assert gone.status_code == 400 and "endpoint: no such endpoint" in gone.content.decode()
    assert mei.post("/compatibility/cells/", data).status_code == 302
    assert Cell.objects.filter(version=v2).count() == 1


def test_only_ml_engineers_name_the_endpoint_serving_a_label(world, personas):
    v1, _, model = world
    data = {"harness": v1.harness.name, "label": "staging", "endpoint": model.pk}
    assert client_for(personas.operator).post("/compatibility/servers/", data).status_code == 403
    bad = client_for(personas.ml_engineer).post(
        "/compatibility/servers/", {**data, "label": "canary"}
    )
    assert bad.status_code == 400 and "label: one of production, staging" in bad.content.decode()
    assert client_for(personas.ml_engineer).post("/compatibility/servers/", data).status_code == 302
    assert LabelServer.objects.get(label="staging").endpoint == model


def test_a_checkpoint_entering_the_registry_is_asked_for_on_production_and_staging(
    world, personas, tmp_path
):
    from harness.checkpoints import fingerprint
    from studio.releases.testing import trained_checkpoint

    run = trained_checkpoint(tmp_path / "new")
    said = []
    assert cells_for_checkpoint(run_id=run.pk, log=said.append) == []  # a smoke run: none
    assert "is a smoke run of the tiny test model" in said[0] and EvalRun.objects.count() == 0
    run.model, run.harness_version, run.created_by = "local", world[0], personas.ml_engineer
    run.save(update_fields=["model", "harness_version", "created_by"])
    cells = cells_for_checkpoint(run_id=run.pk)
    endpoint = ModelEndpoint.objects.get(route=ModelEndpoint.LOCAL, model=str(run.final_dir))
    assert [c.endpoint for c in cells] == [endpoint] and cells[0].version == world[
        0
    ]  # production v1
    assert cells[0].model_fingerprint == fingerprint(run.final_dir)
    runs = EvalRun.objects.count()
    assert cells_for_checkpoint(run_id=run.pk) == cells and EvalRun.objects.count() == runs
    assert json.dumps(cells[0].run.case_ids)  # the compatibility set's cases, variants included
    assert any("~" in case_id for case_id in cells[0].run.case_ids)


def test_compatibility_fill_names_the_server_fills_the_matrix_and_says_what_is_wrong(
    world, django_capture_on_commit_callbacks
):
    from io import StringIO

    from django.core.management import CommandError, call_command

    v1, _, model = world
    with pytest.raises(
        CommandError, match="--serve 'production=nope': expected LABEL=ENDPOINT with an endpoint of"
    ):
        call_command("compatibility_fill", "--serve", "production=nope")
    out, again = StringIO(), StringIO()
    with django_capture_on_commit_callbacks(
        execute=True
    ):  # the jobs run inline once the command has asked
        call_command("compatibility_fill", "--serve", f"staging={model.name}", stdout=out)
    run = EvalRun.objects.get()  # only production has a version: one cell
    assert out.getvalue() == (
        "1 cell(s), 1 new evaluation run(s)\n"
        f"  name-keyed on livestream-avatar v1: queued (run #{run.pk}, 0.0 s scoring)\n"
    )
    assert LabelServer.objects.get(label="staging").endpoint == model
    call_command("compatibility_fill", "--wait", "5", stdout=again)
    lines = again.getvalue().splitlines()
    assert lines[0] == "1 cell(s), 0 new evaluation run(s)" and lines[-1].startswith("waited ")
    assert lines[1].startswith(
        "  name-keyed on livestream-avatar v1: AVG 100.0 [100.0, 100.0], variants "
    )
