"""Agents of one process share their MCP servers: agents that name the same servers with the same
catalogue use one server process (an evaluation's pool of Harness variants started one per agent),
a different catalogue gets its own, a hub nobody holds closes after a while, and a hub that lost its
server is never handed to the next agent."""

from __future__ import annotations

import contextlib
import time

import pytest

from harness import demo_harness_dir, load_dir
from harness.livestream import demo_catalogue
from harness.policies import ScriptedPolicy
from harness.runtime import Agent, mcp_client


def _agent(bundle, catalogue=None) -> Agent:
    return Agent(bundle=bundle, policy=ScriptedPolicy([]), catalogue=catalogue or demo_catalogue())


def _processes(_hub=None):
    """The stdio server processes a hub started (children of this process running serve-mcp)."""
    import psutil

    return [
        p
        for p in psutil.Process().children(recursive=True)
        if "serve-mcp" in " ".join(p.cmdline()) and p.is_running()
    ]


@pytest.fixture
def bundle():
    return load_dir(demo_harness_dir())


@pytest.fixture(autouse=True)
def no_idle_hub_from_an_earlier_test():
    """An earlier test of this process (an xdist worker runs many files) may have left its hub idle
    for the next run to reuse; these tests count the server processes they start, so start clean."""
    mcp_client._close_shared_hubs()
    yield
    mcp_client._close_shared_hubs()


def test_agents_with_the_same_servers_and_catalogue_share_one_server_process(bundle):
    before = {p.pid for p in _processes(None)}
    first, second = _agent(bundle), _agent(bundle)
    try:
        assert first.hub._shared is second.hub._shared
        assert "calculate_promotion" in first.hub.tools["marketing"]
        started = {p.pid for p in _processes(None)} - before
        assert len(started) == 1
        other = demo_catalogue().to_dict()
        other["products"][0]["price"] = other["products"][0]["price"] + 1
        from harness.livestream import Catalogue

        third = _agent(
            bundle, Catalogue.from_dict(other)
        )  # another catalogue: its server prices against it
        try:
            assert third.hub._shared is not first.hub._shared
            assert len({p.pid for p in _processes(None)} - before) == 2
        finally:
            third.close()
    finally:
        first.close()
        second.close()


def test_a_hub_nobody_holds_is_reused_until_it_has_been_idle_then_closed(bundle, monkeypatch):
    monkeypatch.setattr(mcp_client, "IDLE_CLOSE_S", 0.5)
    first = _agent(bundle)
    shared = first.hub._shared
    first.close()
    again = _agent(bundle)  # the next run on this worker, within the idle time
    assert again.hub._shared is shared
    again.close()
    deadline = time.monotonic() + 10
    while shared.hub._loop is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert shared.hub._loop is None, "the idle hub was not closed"
    fresh = _agent(bundle)
    try:
        assert fresh.hub._shared is not shared and fresh.hub.tools["marketing"]
    finally:
        fresh.close()


def test_a_hub_that_lost_its_server_is_not_handed_out_again(bundle):
    first = _agent(bundle)
    shared = first.hub._shared
    for process in _processes():
        process.kill()
    deadline = time.monotonic() + 10  # the session notices its server's end, or the next call does
    while not (shared.hub.errors or shared.hub.broken) and time.monotonic() < deadline:
        with contextlib.suppress(mcp_client.McpCallError):
            first.hub.call(
                "marketing", "calculate_promotion", {"link_id": 1, "quantity": 1}, timeout_s=2
            )
        time.sleep(0.1)
    assert shared.hub.errors or shared.hub.broken
    nxt = _agent(bundle)
    try:
        assert nxt.hub._shared is not shared
        assert "calculate_promotion" in nxt.hub.tools["marketing"]
    finally:
        nxt.close()
        first.close()
