"""Issue 28 items 6 and 7: JSON nested 100,000 deep is a clear 400 (not a 500) on the API and as a
dataset import's catalogue; a dataset import's files are capped by the import limit, and a file of
100,000 bad lines answers a short page that lists the first problems and counts the rest.

Through the real views: the API with a token, the import form as an operator.
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from studio.evolution.models import Dataset
from tests.studio.studio_testing import token_for

pytestmark = pytest.mark.django_db
NESTED = "[" * 100_000 + "]" * 100_000
H = "livestream-avatar"


def _client(user) -> Client:
    client = Client(raise_request_exception=False)  # a 500 is an answer here, not an exception
    client.force_login(user)
    return client


def _api(user, path: str, body: str):
    client = Client(raise_request_exception=False)
    return client.post(
        path, body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token_for(user)}"
    )


@pytest.mark.parametrize("path", ["/api/v1/import/", f"/api/v1/harnesses/{H}/labels/staging/"])
@pytest.mark.parametrize(
    "body", [NESTED, '{"files": ' + NESTED + "}", '{"version": ' + NESTED + "}"]
)
def test_deeply_nested_json_sent_to_the_api_is_a_clear_400(personas, demo_version, path, body):
    response = _api(personas.admin, path, body)
    assert response.status_code == 400, response.content[:300]
    assert "nest deeper than" in json.loads(response.content)["error"]


def test_a_body_that_is_not_utf8_is_a_clear_400(personas, demo_version):
    response = Client(raise_request_exception=False).post(
        "/api/v1/import/",
        b'{"files": "\xff"}',
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token_for(personas.admin)}",
    )
    assert response.status_code == 400 and "UTF-8" in json.loads(response.content)["error"]


def _import(client, *, cases: bytes, catalogue: bytes | None = None, name: str = "probe"):
    data = {
        "name": name,
        "description": "",
        "heldout_share": "0.2",
        "cases": SimpleUploadedFile("cases.jsonl", cases, content_type="application/octet-stream"),
    }
    if catalogue is not None:
        data["catalogue"] = SimpleUploadedFile(
            "catalogue.json", catalogue, content_type="application/json"
        )
    return client.post("/evolution/datasets/import/", data)


def test_a_deeply_nested_catalogue_is_a_clear_400(personas):
    response = _import(
        _client(personas.operator), cases=b'{"id": "a"}\n', catalogue=NESTED.encode()
    )
    page = response.content.decode()
    assert response.status_code == 400 and "catalogue.json" in page and "nest deeper than" in page
    assert not Dataset.objects.exists()


def test_100000_bad_lines_answer_a_short_page_that_counts_them(personas):
    response = _import(_client(personas.operator), cases=b"not json\n" * 100_000)
    page = response.content.decode()
    assert response.status_code == 400
    assert len(page) < 100_000, f"{len(page)} characters"
    assert "cases.jsonl:1:" in page and "cases.jsonl:100000:" not in page
    assert "and 99,950 more problems" in page
    assert not Dataset.objects.exists()


def test_the_import_files_are_capped_by_the_import_limit(personas, settings):
    settings.MAX_IMPORT_BYTES = 64 * 1024
    response = _import(_client(personas.operator), cases=b'{"id": "x"}\n' * 10_000)  # 120 KB
    page = response.content.decode()
    assert response.status_code == 400 and "larger than 64 KiB" in page
    response = _import(
        _client(personas.operator), cases=b'{"id": "x"}\n', catalogue=b" " * (65 * 1024)
    )
    assert response.status_code == 400 and "larger than 64 KiB" in response.content.decode()
    assert not Dataset.objects.exists()
