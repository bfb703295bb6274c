"""An evaluation run of a version that names an MCP server the studio will not start fails in one
line."""

import pytest
from evolution_testing import client_for, small_world

from studio.evolution.models import EvalRun
from studio.evolution.services.runs import eval_run_start
from studio.jobs.models import Job
from studio.jobs.services import job_run
from tests.security.test_studio_mcp_registry import hostile, stored_before_registries

pytestmark = pytest.mark.django_db


def test_a_run_of_a_version_with_its_own_server_command_fails_saying_why(
    personas, demo_sets_dir, defect_files, tmp_path
):
    _, dataset, endpoint = small_world(
        sets_dir=demo_sets_dir, files=defect_files, actor=personas.admin, size=3, tmp_path=tmp_path
    )
    marker = tmp_path / "MARKER"
    attack = stored_before_registries(files=hostile(defect_files, marker), author=personas.operator)
    run = eval_run_start(
        version=attack,
        dataset=dataset,
        endpoint=endpoint,
        case_ids=list(dataset.cases.values_list("case_id", flat=True)),
        actor=personas.operator,
    )
    job = job_run(job_id=run.job_id, heartbeat=False)
    run.refresh_from_db()
    assert job.status == Job.FAILED and run.status == EvalRun.FAILED
    assert run.error.startswith("MCP servers refused; nothing was started:")
    assert "tools.yaml:2: mcp_servers.x: declares its own command" in run.error
    assert "Traceback" not in job.log_tail
    assert not marker.exists() and run.results.count() == 0
    page = client_for(personas.reviewer).get(f"/evolution/runs/{run.pk}/").content.decode()
    assert "declares its own command" in page
