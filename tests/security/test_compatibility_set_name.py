"""Issue 50, finding 7: the compatibility set could be pre-registered.

The studio imports the compatibility set as a dataset named ``compatibility-<version>``, and
found it again by that name. The version is computed from the dev-set any operator can read, so
an operator could import a dataset of that name first, holding the set's case ids with gold
answers of their choosing, and every compatibility cell (and the gate that reads them) would have
been scored on it. The set is now found by the id of the dataset the studio imported itself
(``studio.compatibility.models.SetDataset``): a dataset imported under the derived name is never
read as the set.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from studio.compatibility.models import Cell, LabelServer
from studio.compatibility.selectors import compat_set
from studio.compatibility.testing import source_dataset
from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import Dataset
from tests.studio.studio_testing import client_for

pytestmark = pytest.mark.django_db


def test_a_dataset_imported_under_the_derived_name_is_never_read_as_the_set(
    personas, demo_version, settings, tmp_path, django_capture_on_commit_callbacks
):
    settings.COMPATIBILITY_CASES = 6
    source_dataset(30)
    derived = compat_set()
    planted = []
    for case in derived.cases:  # the set's own ids, with the gold answers the operator chose
        case = json.loads(json.dumps(case))
        case.setdefault("gold", {})["reference_reply"] = "anything scores here"
        planted.append(case)
    operator = client_for(personas.operator)
    imported = operator.post(
        "/evolution/datasets/import/",
        {
            "name": derived.name,
            "cases": SimpleUploadedFile(
                "planted.jsonl", "\n".join(json.dumps(c) for c in planted).encode()
            ),
            "heldout_share": 0,
        },
    )
    assert imported.status_code == 302, imported.content.decode()[:2000]
    theirs = Dataset.objects.get(name=derived.name)
    assert theirs.created_by == personas.operator

    script = tmp_path / "model.json"
    script.write_text('["Thanks for the comment!"]')
    model = ModelEndpoint.objects.create(
        name="model", route=ModelEndpoint.SCRIPTED, script_path=str(script)
    )
    LabelServer.objects.create(harness=demo_version.harness, label="production", endpoint=model)
    with django_capture_on_commit_callbacks(execute=False):  # the cell is asked for, not scored
        asked = operator.post(
            "/compatibility/cells/", {"endpoint": model.pk, "version": demo_version.pk}
        )
    assert asked.status_code == 302, asked.content.decode()[:2000]

    cell = Cell.objects.get()
    assert cell.dataset != theirs  # the studio's own import, not the planted one
    assert cell.dataset.created_by is None and cell.dataset.name.startswith(derived.name + "-")
    studio_cases = {c.case_id: c.data for c in cell.dataset.cases.all()}
    assert studio_cases == {c["id"]: c for c in derived.cases}
    assert all(
        studio_cases[c["id"]]["gold"].get("reference_reply") != "anything scores here"
        for c in derived.cases
    )
    assert compat_set().dataset == cell.dataset  # and it is the set from now on
    # the planted dataset is left as it was: a dataset of the operator's, read by nothing here
    assert Dataset.objects.get(pk=theirs.pk).case_count == len(planted)
