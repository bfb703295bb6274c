"""The token-authenticated JSON API used by scripts and CI."""

from __future__ import annotations

import json

import pytest
from django.test import Client
from studio_testing import edit_skill_rule, token_for

from studio.accounts.models import ApiToken
from studio.harnesses.bundles import files_to_zip
from studio.harnesses.models import HarnessVersion, Label

pytestmark = pytest.mark.django_db


def api(token: str | None):
    client = Client()
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    return client, headers


def test_without_a_valid_token_the_api_answers_401_with_how_to_fix_it(personas, demo_version):
    client, _ = api(None)
    response = client.get("/api/v1/harnesses/")
    assert response.status_code == 401 and "Authorization: Bearer" in response.json()["error"]
    client.force_login(personas.admin)  # a browser session is not an API credential
    assert client.get("/api/v1/harnesses/").status_code == 401
    response = client.get("/api/v1/harnesses/", HTTP_AUTHORIZATION="Bearer hst_wrong")
    assert response.status_code == 401


def test_tokens_are_stored_hashed_and_can_be_revoked(personas, demo_version):
    token = token_for(personas.reviewer)
    row = ApiToken.objects.get(user=personas.reviewer)
    assert token not in (row.digest, row.prefix) and row.prefix == token[:10]
    client, headers = api(token)
    assert client.get("/api/v1/harnesses/", **headers).status_code == 200
    client.force_login(personas.reviewer)
    client.post(f"/accounts/tokens/{row.pk}/revoke/")
    assert Client().get("/api/v1/harnesses/", **headers).status_code == 401


def test_list_versions_and_get_files(personas, demo_version, demo_files):
    client, headers = api(token_for(personas.ml_engineer))
    listing = client.get("/api/v1/harnesses/livestream-avatar/versions/", **headers).json()[
        "versions"
    ]
    assert [v["number"] for v in listing] == [1] and listing[0]["digest"] == demo_version.digest
    files = client.get("/api/v1/harnesses/livestream-avatar/versions/1/", **headers).json()["files"]
    assert files == demo_files
    assert (
        client.get("/api/v1/harnesses/livestream-avatar/versions/9/", **headers).status_code == 404
    )


def test_import_a_zip_then_move_labels(personas, demo_version, demo_files):
    client, headers = api(token_for(personas.operator))
    data = files_to_zip(edit_skill_rule(demo_files), folder="livestream-avatar")
    response = client.post(
        "/api/v1/import/?message=from+CI", data, content_type="application/zip", **headers
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert body["number"] == 2 and body["created"] and body["message"] == "from CI"
    again = client.post("/api/v1/import/", data, content_type="application/zip", **headers)
    assert again.status_code == 200 and again.json()["created"] is False
    moved = client.post(
        "/api/v1/harnesses/livestream-avatar/labels/staging/",
        json.dumps({"version": 2}),
        content_type="application/json",
        **headers,
    )
    assert moved.json() == {"harness": "livestream-avatar", "label": "staging", "version": 2}
    refused = client.post(
        "/api/v1/harnesses/livestream-avatar/labels/production/",
        json.dumps({"version": 2, "reason": "ci"}),
        content_type="application/json",
        **headers,
    )
    assert refused.status_code == 403 and "reviewer" in refused.json()["error"]
    reviewer, rheaders = api(token_for(personas.reviewer))
    no_reason = reviewer.post(
        "/api/v1/harnesses/livestream-avatar/labels/production/",
        json.dumps({"version": 2}),
        content_type="application/json",
        **rheaders,
    )
    assert no_reason.status_code == 400 and "reason" in no_reason.json()["error"]
    gated = reviewer.post(
        "/api/v1/harnesses/livestream-avatar/labels/production/",
        json.dumps({"version": 2, "reason": "regression suite green"}),
        content_type="application/json",
        **rheaders,
    )
    # no evolution stage evaluated v2, no replay or IFEval finished: the release gates have no data
    assert gated.status_code == 400 and "release gates did not pass" in gated.json()["error"]
    assert not Label.objects.filter(name="production").exists()
    ok = reviewer.post(
        "/api/v1/harnesses/livestream-avatar/labels/production/",
        json.dumps(
            {
                "version": 2,
                "reason": "regression suite green",
                "override_reason": "hotfix, gates next week",
            }
        ),
        content_type="application/json",
        **rheaders,
    )
    assert ok.status_code == 200, ok.content
    assert Label.objects.get(name="production").version.number == 2


def test_import_of_an_invalid_bundle_lists_every_problem(personas, demo_files):
    client, headers = api(token_for(personas.operator))
    broken = dict(demo_files)
    broken["skills/item_qa/SKILL.md"] = broken["skills/item_qa/SKILL.md"].replace(
        "name: item_qa", "name: wrong_name"
    )
    broken["prompt.yaml"] = "blocks: {\n"
    response = client.post(
        "/api/v1/import/", json.dumps({"files": broken}), content_type="application/json", **headers
    )
    assert response.status_code == 400
    problems = response.json()["problems"]
    assert any(p.startswith("skills/item_qa/SKILL.md:") for p in problems)
    assert any(p.startswith("prompt.yaml:") for p in problems)
    assert HarnessVersion.objects.count() == 0
