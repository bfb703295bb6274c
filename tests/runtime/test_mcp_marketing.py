"""The marketing MCP server as a real process (stdio and streamable HTTP), through the loop."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import httpx
import pytest

from harness.livestream import demo_catalogue
from harness.mcp_registry import McpRegistry
from harness.policies import ScriptedPolicy
from harness.runtime import Agent
from harness.tools import McpServerSpec

from .helpers import call, price_request

PROMO_SCRIPT = [
    call("calculate_promotion", link_id=3, quantity=3),
    call("load_skill", name="item_qa"),
    "Three of link 3 cost 226.95 yuan with the buy 3 offer.",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_registry(url: str) -> McpRegistry:
    """A deployment registry whose 'marketing' server is reached over HTTP at `url`."""
    return McpRegistry({"marketing": McpServerSpec("marketing", "http", url=url)})


def run_promo(bundle, script=PROMO_SCRIPT, registry=None):
    request = price_request(comments=["how much for three of #3?"])
    with Agent(
        bundle=bundle,
        policy=ScriptedPolicy(script),
        catalogue=demo_catalogue(),
        mcp_registry=registry,
    ) as agent:
        status = agent.mcp_status()
        return agent.run(request), status


def test_stdio_server_subprocess_discovered_and_prices_through_the_loop(demo_bundle):
    traj, status = run_promo(demo_bundle)
    assert status["marketing"]["tools"] == [
        "calculate_optimal_promotion",
        "calculate_promotion",
        "get_campaign_conditions",
    ]
    quote = traj.tool_calls[0].result
    # 3 x 89 = 267; buy-3 15% off = 40.05; 226.95 < 300, so no threshold discount
    assert (quote["subtotal"], quote["product_discount"], quote["total"]) == (267.0, 40.05, 226.95)
    assert quote["applied_promotion_ids"] == ["P-SUN-MULTI"]
    assert traj.tool_calls[0].binding == "mcp:marketing/calculate_promotion"
    assert traj.outcome == "replied"


@pytest.fixture
def http_server():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "harness", "serve-mcp", "--http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(url, timeout=0.5)
            break
        except httpx.HTTPError:
            if proc.poll() is not None:
                pytest.fail(f"serve-mcp exited: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.2)
    yield url
    proc.terminate()
    proc.wait(timeout=10)


def test_http_server_optimal_promotion_through_the_loop(demo_bundle, http_server):
    script = [
        call(
            "calculate_optimal_promotion",
            items=[{"link_id": 1, "quantity": 2}, {"link_id": 2, "quantity": 1}],
        ),
        call("load_skill", name="general_discount"),
        "Together they come to 189.50 yuan after the offers.",
    ]
    traj, status = run_promo(demo_bundle, script, http_registry(http_server))
    assert "calculate_optimal_promotion" in status["marketing"]["tools"]
    best = traj.tool_calls[0].result
    # cream 2 x 129 = 258 - 20% = 206.40; serum 159 - 10% = 143.10; 349.50 >= 300 -> -40
    # = 309.50; coupon LIVE20 (min 150) -> 289.50
    assert best["best_total"] == 289.5
    assert best["best"]["coupon_code"] == "LIVE20"
    assert best["best"]["threshold_promotion_id"] == "P-ROOM-300"
    # 189.50 is not what the tool said: the grounding hook blocks it, the script has no fix
    assert any(
        h.hook_id == "numbers-grounded" and h.decision == "block" for h in traj.hook_decisions
    )


def test_declared_tool_the_server_does_not_offer(demo_bundle):
    text = demo_bundle.files["tools.yaml"].replace(
        "marketing/get_campaign_conditions", "marketing/get_campaign_rules"
    )
    bundle = demo_bundle.with_files({"tools.yaml": text})
    script = [
        call("get_campaign_conditions", link_id=3),
        call("load_skill", name="item_qa"),
        "Let me check the offers on link 3 for you.",
    ]
    traj, status = run_promo(bundle, script)
    assert status["marketing"]["missing"] == ["get_campaign_rules"]
    assert (
        "has no tool 'get_campaign_rules' (it offers: calculate_optimal_promotion"
        in traj.tool_calls[0].error
    )
    assert traj.outcome == "replied"


def test_server_down_gives_a_clear_tool_error_and_the_request_completes(demo_bundle):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    script = [
        call("calculate_promotion", link_id=3, quantity=1),
        call("load_skill", name="item_qa"),
        "Let me confirm the offer for link 3 with the team.",
    ]
    started = time.monotonic()
    traj, status = run_promo(demo_bundle, script, http_registry(url))
    assert "unavailable" in status["marketing"]["error"]
    failed = traj.tool_calls[0]
    assert failed.error_kind == "unavailable"
    assert "MCP server 'marketing' unavailable" in failed.error
    assert traj.outcome == "replied"
    assert time.monotonic() - started < 25
