"""The complete agent as the replay's request function, and what all its requests share.

`shared_services(...)` resolves the Harness's MCP servers against the MCP
registry (harness.mcp_registry) and starts, for the whole run, this project's
marketing MCP server as its own process over streamable HTTP (a real network
hop, as in production) on the run's catalogue. Every agent gets a registry in
which that server's name points at the URL; the Harness itself is unchanged.

`agent_worker_factory(...)` gives each replay worker its own `Agent` (runtime,
hooks, round limit, tool timeout) driving an `OpenAIChatPolicy` against the
serving endpoint with streaming on, so TTFT and decode speed are client-observed;
the policy comes from the project's one factory (`harness.policies.make_policy`,
the `replay` role), as every other model call's does.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from harness.mcp_registry import McpRegistry
from harness.runtime.traffic import TrafficPoster
from harness.tools import McpServerSpec
from serving.endpoint import Endpoint, GenerationSettings
from serving.replay import RequestOutcome, WorkerFactory
from serving.transformers_server import die_with_parent, free_port

MCP_MODULE = "harness.mcp_server"


def _is_project_mcp_server(command: tuple[str, ...]) -> bool:
    """Whether a stdio command starts this project's marketing MCP server."""
    joined = " ".join(command)
    return f"-m {MCP_MODULE}" in joined or ("-m harness" in joined and "serve-mcp" in command)


class ReplayServices:
    """The MCP server process(es) and the agents of one run; closed when the run ends."""

    def __init__(
        self,
        *,
        bundle,
        run_dir: Path,
        catalogue_path: str | None,
        registry: McpRegistry | None = None,
        trust_harness_commands: bool = False,
    ):
        self.bundle = bundle
        self.run_dir = Path(run_dir)
        self.catalogue_path = catalogue_path
        self.catalogue = None
        self.base_registry = registry if registry is not None else McpRegistry.default()
        self.registry = self.base_registry
        self.trust_harness_commands = trust_harness_commands
        self.processes: dict[str, subprocess.Popen] = {}
        self.servers: dict[str, dict[str, Any]] = {}
        self._agents: list[Any] = []
        self._lock = threading.Lock()
        # posts every trajectory to a studio deployment when the replay was asked to (``--post``)
        self.traffic: TrafficPoster | None = None

    def start(self) -> ReplayServices:
        from harness.livestream import Catalogue, demo_catalogue

        # Refuses (McpServerRefused) before any process starts.
        resolved = self.base_registry.resolve(
            self.bundle.tool_registry, trust_harness_commands=self.trust_harness_commands
        )
        if self.catalogue_path:
            self.catalogue = Catalogue.load(self.catalogue_path)
        else:
            self.catalogue = demo_catalogue()
            self.catalogue_path = str(self.run_dir / "catalogue.json")
            self.catalogue.dump(self.catalogue_path)
        over_http = {}
        for name, spec in resolved.items():
            if (
                spec.registered
                and spec.transport == "stdio"
                and _is_project_mcp_server(spec.command)
            ):
                url, proc, log = self._start_http_server(name)
                self.processes[name] = proc
                over_http[spec.registered] = McpServerSpec(spec.registered, "http", url=url)
                self.servers[name] = {
                    "transport": "http",
                    "url": url,
                    "pid": proc.pid,
                    "log": str(log),
                    "catalogue": self.catalogue_path,
                }
            else:
                self.servers[name] = {
                    "transport": spec.transport,
                    "url": spec.url or None,
                    "command": list(spec.command),
                }
        if over_http:
            self.registry = self.base_registry.merged(McpRegistry(over_http))
        return self

    def _start_http_server(self, name: str) -> tuple[str, subprocess.Popen, Path]:
        port = free_port()
        log = self.run_dir / f"mcp-{name}.log"
        argv = [
            sys.executable,
            "-m",
            MCP_MODULE,
            "--http",
            str(port),
            "--host",
            "127.0.0.1",
            "--catalogue",
            str(self.catalogue_path),
        ]
        with open(log, "ab") as fh:
            fh.write(f"$ {' '.join(argv)}\n".encode())
            proc = subprocess.Popen(
                argv,
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"MCP server {name} exited with code {proc.returncode}; log {log}:\n"
                    + log.read_text(errors="replace")[-2000:]
                )
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", port), timeout=1),
            ):
                return f"http://127.0.0.1:{port}/mcp", proc, log
            time.sleep(0.1)
        proc.kill()
        raise RuntimeError(
            f"MCP server {name} did not listen on port {port} within 60 s; log {log}"
        )

    def register(self, agent: Any) -> None:
        with self._lock:
            self._agents.append(agent)

    def describe(self) -> dict[str, Any]:
        return {"mcp_servers": self.servers, "catalogue": self.catalogue_path}

    def close(self) -> None:
        with self._lock:
            agents, self._agents = self._agents, []
        for agent in agents:
            with contextlib.suppress(Exception):
                agent.close()
        for proc in self.processes.values():
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        self.processes.clear()


@contextlib.contextmanager
def shared_services(
    *,
    endpoint: Endpoint,
    bundle,
    run_dir: Path,
    catalogue_path: str | None = None,
    trust_harness_commands: bool = False,
) -> Iterator[ReplayServices]:
    services = ReplayServices(
        bundle=bundle,
        run_dir=run_dir,
        catalogue_path=catalogue_path,
        trust_harness_commands=trust_harness_commands,
    )
    try:
        yield services.start()
    finally:
        services.close()


def replay_policy(*, endpoint: Endpoint, settings: GenerationSettings):
    """(the agent's policy, its generation settings) for one replay worker: the project's one
    ``make_policy`` on the endpoint, in the ``replay`` role (``harness.policies.roles``: its 120 s
    client timeout), sending the request fields that make ``settings`` take effect on the engine
    (``Endpoint.extra_body``)."""
    from harness.policies import GenerationSettings as PolicySettings
    from harness.policies import make_policy
    from harness.policies.openai_chat import KEYLESS

    policy_settings = PolicySettings(
        temperature=settings.temperature,
        top_p=settings.top_p,
        max_new_tokens=settings.max_tokens,
        seed=settings.seed,
    )
    policy = make_policy(
        f"openai:{endpoint.base_url}:{endpoint.model}",
        settings=policy_settings,
        role="replay",
        api_key=endpoint.api_key or KEYLESS,
        name=f"{endpoint.engine}:{endpoint.profile.name}",
        extra_body=endpoint.extra_body(settings),
    )
    return policy, policy_settings


def outcome_from_trajectory(traj: dict[str, Any]) -> RequestOutcome:
    """The replay's view of a trajectory: status, per-call timings, counts.

    How the request ended is ``evaluation.scoring.outcome_and_reason``, the evaluation's own
    classification: replied and silent are "ok", the Harness's fallback and suppression are
    "fallback", a runtime error or an endpoint that never answered is "error"."""
    from evaluation.scoring import outcome_and_reason

    outcome, reason = outcome_and_reason(traj)
    model_calls = traj.get("model_calls", [])
    if outcome == "error":
        status, error = "error", reason
    elif outcome in ("replied", "silent"):
        status, error = "ok", None
    else:
        status, error = "fallback", f"{outcome}: {reason}" if reason else outcome
    calls = [
        {
            "ttft_s": c.get("ttft_s"),
            "latency_s": c.get("latency_s"),
            "input_tokens": c.get("input_tokens"),
            "output_tokens": c.get("output_tokens"),
            "cached_tokens": c.get("cached_tokens"),
            "error": c.get("error"),
        }
        for c in model_calls
    ]
    tools = traj.get("tool_calls", [])
    return RequestOutcome(
        status=status,
        calls=calls,
        error=error,
        rounds=traj.get("rounds"),
        reply_route=traj.get("route"),
        reply_chars=len(traj.get("reply") or ""),
        tool_calls=len(tools),
        tool_errors=sum(1 for t in tools if t.get("error")),
    )


def agent_worker_factory(
    *, endpoint: Endpoint, bundle, settings: GenerationSettings, context: ReplayServices
) -> WorkerFactory:
    """Each call makes one worker's request function: its own Agent and policy."""
    from harness.runtime import Agent

    def factory():
        policy, policy_settings = replay_policy(endpoint=endpoint, settings=settings)
        agent = Agent(
            bundle=context.bundle,
            policy=policy,
            catalogue=context.catalogue,
            generation=policy_settings,
            mcp_registry=context.registry,
            trust_harness_commands=context.trust_harness_commands,
        )
        context.register(agent)

        def run(case: dict[str, Any]) -> RequestOutcome:
            request = case["request"]
            if context.traffic is not None and not request.get("id"):
                # a request without an id is named "request": the studio would keep one trajectory
                # of the run
                request = {**request, "id": case["id"]}
            trajectory = agent.run(request).to_dict()
            if context.traffic is not None:
                context.traffic.add(trajectory)
            return outcome_from_trajectory(trajectory)

        def cancel() -> None:
            # Closing the client breaks the stream in flight; the server then stops generating.
            policy.client.close()

        run.cancel = cancel
        return run

    return factory
