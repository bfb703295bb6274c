"""The 404 convention (studio.lookups): selectors raise the model's DoesNotExist, views answer 404
naming what is missing, in every app."""

from __future__ import annotations

import pytest
from studio_testing import client_for, page_text

from studio.evolution import selectors as evolution_selectors
from studio.evolution.models import Stage

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("/evolution/999999/", "no evolution #999999"),
        ("/evolution/stages/999999/", "no stage #999999"),
        ("/evolution/runs/999999/", "no evaluation run #999999"),
        ("/evolution/datasets/no-such-set/", "no dataset 'no-such-set'"),
        ("/evolution/proposals/999999/review/", "no proposal #999999"),
        ("/training/runs/999999/", "no training run #999999"),
        ("/jobs/999999/", "no job #999999"),
        ("/releases/999999/", "no release #999999"),
        ("/endpoints/999999/edit/", "no endpoint #999999"),
        ("/endpoints/secrets/999999/edit/", "no secret #999999"),
        ("/mcp-servers/999999/edit/", "no MCP server #999999"),
        ("/traffic/999999/", "no trajectory #999999"),
        ("/annotation/calibrations/999999/", "no calibration #999999"),
        ("/annotation/q/no-such-queue/", "no annotation queue 'no-such-queue'"),
        ("/h/no-such-harness/", "no Harness named 'no-such-harness'"),
        ("/drafts/999999/", "no draft #999999"),
    ],
)
def test_a_missing_object_is_a_404_naming_it(personas, url, message):
    client = client_for(personas.admin)
    response = client.post(url) if "/proposals/" in url else client.get(url)
    assert response.status_code == 404
    assert message in page_text(response)


def test_a_selector_knows_nothing_of_http():
    with pytest.raises(Stage.DoesNotExist):
        evolution_selectors.stage_get(stage_id=999999)
