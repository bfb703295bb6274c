"""`python -m harness run --post URL` posts the trajectory it recorded to a running studio, as a
deployment: the studio keeps it with its Harness digest and the model, and a bad setting stops
before the run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from studio.traffic.models import TrafficTrajectory
from tests.cli import run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runtime"
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def shop(personas):
    from studio.traffic.services import deployment_create, deployment_token_create

    deployment = deployment_create(name="shop-eu", actor=personas.operator)
    return deployment_token_create(deployment=deployment, actor=personas.operator)[1]


def _args(tmp_path, url: str) -> list[str]:
    request = json.loads((FIXTURES / "product_price.trajectory.json").read_text())["request"]
    (tmp_path / "request.json").write_text(json.dumps(request))
    return [
        "run",
        "--request",
        str(tmp_path / "request.json"),
        "--policy",
        f"scripted:{FIXTURES / 'product_price.script.json'}",
        "--post",
        url,
    ]


def test_harness_run_posts_its_trajectory(shop, live_server, tmp_path, demo_version):
    url = f"{live_server.url}/api/v1/deployments/shop-eu/trajectories/"
    done = run("harness", *_args(tmp_path, url), env={"HARNESS_TRAFFIC_TOKEN": shop})
    assert done.returncode == 0, done.stderr
    assert f"posted product-price-001 to {url}: stored" in done.stderr
    row = TrafficTrajectory.objects.get()
    assert row.request_id == "product-price-001" and row.deployment.name == "shop-eu"
    assert row.harness_version == demo_version  # the demo Harness's digest, known to the studio
    assert row.model_name.startswith("scripted:")
    again = run("harness", *_args(tmp_path, url), env={"HARNESS_TRAFFIC_TOKEN": shop})
    assert again.returncode == 0 and "already stored (same request id)" in again.stderr
    assert TrafficTrajectory.objects.count() == 1


def test_no_token_or_a_wrong_one_is_said_plainly(shop, live_server, tmp_path):
    url = f"{live_server.url}/api/v1/deployments/shop-eu/trajectories/"
    missing = run("harness", *_args(tmp_path, url), env={"HARNESS_TRAFFIC_TOKEN": ""})
    assert missing.returncode == 2 and "$HARNESS_TRAFFIC_TOKEN is not set" in missing.stderr
    assert "Traceback" not in missing.stderr
    wrong = run("harness", *_args(tmp_path, url), env={"HARNESS_TRAFFIC_TOKEN": "hsd_wrong"})
    assert wrong.returncode == 1 and "the studio answered 401" in wrong.stderr
    assert not TrafficTrajectory.objects.exists()


def test_a_deployment_replay_posts_every_trajectory(shop, live_server, tmp_path):
    from harness import demo_harness_dir
    from harness.runtime.traffic import TrafficPoster
    from serving.endpoint import GenerationSettings
    from serving.profiles import resolve_route
    from serving.replay import ReplayPlan
    from serving.service import replay_run
    from tests.fake_openai import FakeOpenAI

    cases = tmp_path / "cases.jsonl"
    cases.write_text(
        "".join(
            json.dumps({"id": f"case-{i}", "request": {"comments": [f"How much is link {i + 1}?"]}})
            + "\n"
            for i in range(3)
        )
    )
    poster = TrafficPoster(
        url=f"{live_server.url}/api/v1/deployments/shop-eu/trajectories/", token=shop
    )
    with FakeOpenAI(models=["fake-policy"]) as server:
        run_dir = replay_run(
            profile=resolve_route(f"sglang:{server.url}:fake-policy"),
            harness_dir=demo_harness_dir(),
            cases_path=cases,
            plan=ReplayPlan(concurrency=(1,), warmup=1, measured=2, request_timeout_s=30),
            settings=GenerationSettings(),
            out_root=tmp_path / "runs",
            run_id="posted",
            traffic=poster,
        )
    meta = json.loads((run_dir / "run.json").read_text())
    assert meta["traffic"]["stored"] == 3 and "error" not in meta["traffic"]
    rows = TrafficTrajectory.objects.order_by("request_id")
    assert [r.request_id for r in rows] == ["case-0", "case-1", "case-2"]
    assert {r.model_name for r in rows} == {"fake-policy"}
