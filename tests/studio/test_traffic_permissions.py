"""Every traffic, annotation and edit-benchmark view x every role: allowed roles get through, others
get 403, anonymous must sign in. The table names each URL once; a named URL missing from it fails
the first test (the core matrix, tests/studio/test_permission_matrix.py, leaves these apps to their
own)."""

from __future__ import annotations

import pytest
from studio_testing import client_for
from test_permission_matrix import _named_urls

from studio.accounts.roles import user_can
from studio.annotation.services import label_save, queue_add_traffic, queue_create, queue_export
from studio.traffic.services import deployment_create, deployment_token_create, traffic_ingest
from studio.traffic.testing import agent_trajectories, world_cases

pytestmark = pytest.mark.django_db

ROLES = ["operator", "reviewer", "ml_engineer", "admin", "outsider", "anonymous"]

# (url name, method, path, permission, data)
MATRIX = [
    ("traffic:traffic_list", "get", "/traffic/", "traffic.view", None),
    ("traffic:traffic_detail", "get", "/traffic/{trajectory}/", "traffic.view", None),
    ("traffic:deployment_list", "get", "/traffic/deployments/", "traffic.view", None),
    (
        "traffic:deployment_create",
        "post",
        "/traffic/deployments/new/",
        "traffic.deploy",
        {"name": "d-{role}"},
    ),
    ("traffic:token_create", "post", "/traffic/deployments/shop/tokens/", "traffic.deploy", {}),
    ("traffic:token_revoke", "post", "/traffic/tokens/{token}/revoke/", "traffic.deploy", {}),
    ("annotation:queue_list", "get", "/annotation/", "traffic.view", None),
    (
        "annotation:queue_add_traffic",
        "post",
        "/annotation/add/traffic/",
        "annotation.label",
        {"trajectory": "{trajectory}", "queue": "q"},
    ),
    (
        "annotation:queue_add_source",
        "post",
        "/annotation/add/",
        "annotation.label",
        {"dataset": "none", "queue": "q"},
    ),
    ("annotation:queue_detail", "get", "/annotation/q/q/", "traffic.view", None),
    ("annotation:queue_next", "get", "/annotation/q/q/next/", "annotation.label", None),
    ("annotation:item_label", "get", "/annotation/q/q/items/1/", "annotation.label", None),
    ("annotation:queue_export", "post", "/annotation/q/q/export/", "annotation.label", {}),
    ("annotation:calibration_list", "get", "/annotation/calibrations/", "traffic.view", None),
    (
        "annotation:calibration_start",
        "post",
        "/annotation/calibrations/start/",
        "judge.calibrate",
        {"judge": "programmatic", "dataset": "none"},
    ),
    (
        "annotation:calibration_detail",
        "get",
        "/annotation/calibrations/{calibration}/",
        "traffic.view",
        None,
    ),
    (
        "annotation:export_download",
        "get",
        "/annotation/q/q/exports/1/calibration.jsonl",
        "traffic.view",
        None,
    ),
    (
        "annotation:calibration_retire",
        "post",
        "/annotation/calibrations/{calibration}/retire/",
        "judge.retire",
        {},
    ),
    ("editbench:benchmark", "get", "/edit-benchmark/", "evolution.view", None),
    (
        "editbench:benchmark_start",
        "post",
        "/edit-benchmark/start/",
        "evolution.run",
        {"stage": "0"},
    ),
]


def test_every_traffic_and_annotation_url_is_in_the_matrix():
    names = {
        n for n in _named_urls() if n.rpartition(":")[0] in ("traffic", "annotation", "editbench")
    }
    assert names == {row[0] for row in MATRIX}


@pytest.fixture
def world(personas):
    from studio.annotation.testing import calibrated_judge

    cases, catalogue = world_cases(1)
    deployment = deployment_create(name="shop", actor=personas.admin)
    traffic_ingest(deployment=deployment, records=agent_trajectories(cases, catalogue=catalogue))
    queue = queue_create(name="q", actor=personas.admin)
    queue_add_traffic(queue=queue, trajectories=deployment.trajectories.all(), actor=personas.admin)
    label_save(
        item=queue.items.get(),
        labeller=personas.admin,
        accuracy=1,
        effectiveness=1,
        category="product_qa",
        route="public",
    )
    queue_export(queue=queue, actor=personas.admin)
    return {
        "trajectory": deployment.trajectories.get().pk,
        "calibration": calibrated_judge().pk,
        "deployment": deployment,
    }


@pytest.mark.parametrize("role", ROLES)
def test_permission_matrix(role, personas, world):
    user = personas.by_role()[role]
    client = client_for(user)
    failures = []
    for _name, method, template, permission, data in MATRIX:
        token = deployment_token_create(deployment=world["deployment"], actor=None)[0].pk
        values = {
            "trajectory": world["trajectory"],
            "calibration": world["calibration"],
            "token": token,
            "role": role,
        }

        def fill(text, values=values):
            for key, value in values.items():
                text = text.replace("{" + key + "}", str(value))
            return text

        path = fill(template)
        response = (
            client.get(path)
            if method == "get"
            else client.post(path, {k: fill(v) for k, v in (data or {}).items()})
        )
        if user is None:
            ok = response.status_code == 302 and "/accounts/login/" in response["Location"]
        elif user_can(user, permission):
            ok = response.status_code in (200, 302) and "/accounts/login/" not in response.get(
                "Location", ""
            )
        else:
            ok = response.status_code == 403
        if not ok:
            failures.append(
                f"{role} {method.upper()} {path} ({permission}): {response.status_code}"
            )
    assert not failures, "\n".join(failures)
