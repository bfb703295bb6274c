"""Every evolution view x every role: allowed roles get through, others get 403, anonymous must sign
in.

A test fails when a named evolution URL is missing from the table, so a new
view cannot ship without its row.
"""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import URLResolver, get_resolver
from evolution_testing import client_for, small_world

from studio.accounts.roles import PERMISSIONS, user_can
from studio.evolution.services.diagnosis import diagnosis_start
from studio.evolution.services.stages import evolution_start

pytestmark = pytest.mark.django_db

ROLES = ["operator", "reviewer", "ml_engineer", "admin", "outsider", "anonymous"]
CASE = (
    '{"format":"hs-case/1","id":"x1","category":"chitchat",'
    '"comments":["hi"],"gold":{"route":"public"}}'
)

# (url name, method, path template, permission, data)
MATRIX = [
    ("evolution:evolution_list", "get", "/evolution/", "evolution.view", None),
    ("evolution:evolution_new", "get", "/evolution/new/", "evolution.run", None),
    ("evolution:evolution_detail", "get", "/evolution/{evolution}/", "evolution.view", None),
    ("evolution:dataset_list", "get", "/evolution/datasets/", "evolution.view", None),
    ("evolution:dataset_import", "post", "/evolution/datasets/import/", "evolution.run", "upload"),
    ("evolution:dataset_detail", "get", "/evolution/datasets/{dataset}/", "evolution.view", None),
    (
        "evolution:dataset_case",
        "get",
        "/evolution/datasets/{dataset}/cases/{case}/",
        "evolution.view",
        None,
    ),
    ("evolution:run_detail", "get", "/evolution/runs/{run}/", "evolution.view", None),
    ("evolution:run_status", "get", "/evolution/runs/{run}/status/", "evolution.view", None),
    ("evolution:run_resume", "post", "/evolution/runs/{run}/resume/", "evolution.run", {}),
    ("evolution:run_case", "get", "/evolution/runs/{run}/cases/{case}/", "evolution.view", None),
    ("evolution:stage_detail", "get", "/evolution/stages/{stage}/", "evolution.view", None),
    ("evolution:stage_status", "get", "/evolution/stages/{stage}/status/", "evolution.view", None),
    (
        "evolution:stage_diagnose",
        "post",
        "/evolution/stages/{stage}/diagnose/",
        "evolution.run",
        {},
    ),
    (
        "evolution:stage_candidate",
        "post",
        "/evolution/stages/{stage}/candidate/",
        "evolution.review",
        {},
    ),
    (
        "evolution:stage_candidate_reject",
        "post",
        "/evolution/stages/{stage}/candidate/reject/",
        "evolution.review",
        {},
    ),
    ("evolution:stage_edit", "post", "/evolution/stages/{stage}/edit/", "evolution.edit", {}),
    (
        "evolution:stage_decide",
        "post",
        "/evolution/stages/{stage}/decide/",
        "evolution.review",
        {"decision": "stop"},
    ),
    (
        "evolution:proposal_review",
        "post",
        "/evolution/proposals/{proposal}/review/",
        "evolution.review",
        {"action": "accept"},
    ),
    (
        "evolution:proposal_edit",
        "post",
        "/evolution/proposals/{proposal}/edit/",
        "evolution.edit",
        {},
    ),
]


def evolution_url_names() -> set[str]:
    for pattern in get_resolver().url_patterns:
        if isinstance(pattern, URLResolver) and pattern.namespace == "evolution":
            return {f"evolution:{p.name}" for p in pattern.url_patterns if p.name}
    raise AssertionError("the evolution URLs are not included in studio/urls.py")


def test_every_evolution_url_is_in_the_matrix():
    assert evolution_url_names() == {row[0] for row in MATRIX}
    assert {row[3] for row in MATRIX} <= {k for k in PERMISSIONS if k.startswith("evolution.")}


@pytest.fixture
def world(personas, demo_sets_dir, defect_files, tmp_path, django_capture_on_commit_callbacks):
    version, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=12, tmp_path=tmp_path
    )
    with django_capture_on_commit_callbacks(execute=True):
        evolution = evolution_start(
            name="perm", version=version, dataset=dataset, endpoint=endpoint, actor=personas.admin
        )
    stage = evolution.stages.get()
    with django_capture_on_commit_callbacks(execute=True):
        diagnosis = diagnosis_start(stage=stage, actor=personas.admin)
    return {
        "evolution": evolution.pk,
        "dataset": dataset.name,
        "case": dataset.cases.first().case_id,
        "run": stage.parent_run_id,
        "stage": stage.pk,
        "proposal": diagnosis.proposals.first().pk,
    }


@pytest.mark.parametrize("role", ROLES)
def test_permission_matrix(role, personas, world):
    user = personas.by_role()[role]
    client = client_for(user)
    for name, method, template, permission, data in MATRIX:
        path = template.format(**world)
        if data == "upload":
            data = {
                "name": f"up-{role}",
                "heldout_share": "0.2",
                "cases": SimpleUploadedFile("c.jsonl", CASE.encode()),
            }
        response = getattr(client, method)(path, data) if method == "post" else client.get(path)
        if user is None:
            assert response.status_code == 302 and "/accounts/login/" in response.url, (name, role)
        elif user_can(user, permission):
            assert response.status_code in (200, 302), (name, role, response.status_code)
            if response.status_code == 302:
                assert "/accounts/login/" not in response.url, (name, role)
        else:
            assert response.status_code == 403, (name, role, response.status_code)
