"""MCP tools for the runtime: connect to a Harness's MCP servers and call their tools.

The servers arrive resolved by :mod:`harness.mcp_registry` (what to start, and
which environment variables it may receive); nothing here reads a Harness.

``McpHub`` owns one background thread with an asyncio loop; each server gets a
long-lived ``mcp.Client`` session (a stdio subprocess or a streamable-HTTP URL)
opened at start-up, when its tools are discovered. Calls from the agent's
threads are scheduled on that loop and waited for with the tool's timeout. A
server that cannot be reached is remembered with the reason, and every call to
it fails with that reason instead of hanging: the request still completes.

Agents share hubs (:func:`shared_hub`): every agent of a process that names the same servers with
the same environment (the same catalogue file included) uses one hub, so an evaluation's pool of
Harness variants, its concurrent requests and the next run on the same worker start each server once
instead of once per agent (a stdio server is a Python process: one to three seconds to start on two
cores). A hub nobody holds is closed after ``IDLE_CLOSE_S``; one that could not reach a server, or
lost one mid-call, is never handed out again, so the next agent connects afresh.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import shutil
import sys
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import asdict
from typing import Any

from harness.mcp_registry import server_environment
from harness.tools import McpServerSpec

CONNECT_TIMEOUT_S = 20.0
IDLE_CLOSE_S = 60.0  # a shared hub nobody holds is closed after this long


class McpCallError(RuntimeError):
    """An MCP tool call failed; ``kind`` is timeout, unavailable or tool_error."""

    def __init__(self, message: str, *, kind: str) -> None:
        super().__init__(message)
        self.kind = kind


def _stdio_params(spec: McpServerSpec, env: dict[str, str]):
    """The server's command as given (found on PATH when not a path) and its minimal environment:
    the SDK's defaults (PATH, HOME, ...), then the spec's declared variables, then ``env``."""
    from mcp import StdioServerParameters

    command, *args = spec.command
    return StdioServerParameters(
        command=shutil.which(command) or command, args=list(args), env=server_environment(spec, env)
    )


def _errlog():
    """Where a stdio server's stderr goes: a stream with a real file descriptor.

    pytest's capture and Celery's logging proxy replace sys.stderr with objects
    that have none, and the subprocess needs one."""
    for stream in (sys.stderr, sys.__stderr__):
        try:
            stream.fileno()
            return stream
        except (AttributeError, OSError, ValueError):
            continue
    return open(os.devnull, "w")  # noqa: SIM115 - lives as long as the server process


class McpHub:
    """Connections to every MCP server of a bundle, with their discovered tools."""

    def __init__(
        self,
        servers: dict[str, McpServerSpec],
        *,
        env: dict[str, str] | None = None,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.servers = dict(servers)
        self.env = dict(env or {})
        self.tools: dict[
            str, dict[str, dict[str, Any]]
        ] = {}  # server -> tool -> {description, input_schema}
        self.errors: dict[str, str] = {}
        self._clients: dict[str, Any] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop: asyncio.Event | None = None
        self._tasks: list[asyncio.Future] = []
        self.broken = False  # a server's connection failed mid-call: not to be shared again
        if self.servers:
            self._start(connect_timeout_s)

    # --- lifecycle -------------------------------------------------------------
    def _start(self, timeout_s: float) -> None:
        self._loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run() -> None:
            asyncio.set_event_loop(self._loop)
            self._stop = asyncio.Event()
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="mcp-hub", daemon=True)
        self._thread.start()
        ready.wait()
        waits = []
        for name, spec in self.servers.items():
            connected = threading.Event()
            fut = asyncio.run_coroutine_threadsafe(self._hold(name, spec, connected), self._loop)
            self._tasks.append(fut)
            waits.append((name, connected, fut))
        for name, connected, fut in waits:
            if not connected.wait(timeout_s) and name not in self.errors:
                self.errors[name] = f"MCP server '{name}' did not answer within {timeout_s:.0f} s"
                fut.cancel()

    async def _hold(self, name: str, spec: McpServerSpec, connected: threading.Event) -> None:
        from mcp import Client

        try:
            if spec.transport == "http":
                target = spec.url
            else:
                from mcp.client.stdio import stdio_client

                target = stdio_client(_stdio_params(spec, self.env), errlog=_errlog())
            kwargs: dict[str, Any] = {}
            if spec.transport == "stdio":
                kwargs["raise_exceptions"] = False
            async with Client(target, **kwargs) as client:
                listed = await client.list_tools()
                self.tools[name] = {
                    t.name: {"description": t.description or "", "input_schema": t.input_schema}
                    for t in listed.tools
                }
                self._clients[name] = client
                connected.set()
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - any failure means "unavailable", with its reason
            if not isinstance(exc, asyncio.CancelledError):
                self.errors[name] = f"MCP server '{name}' unavailable: {_reason(exc)}"
            self._clients.pop(name, None)
            connected.set()

    def close(self) -> None:
        if self._loop is None:
            return
        loop, self._loop = self._loop, None
        if self._stop is not None:
            loop.call_soon_threadsafe(self._stop.set)
        for fut in self._tasks:
            try:
                fut.result(timeout=5)
            except Exception:  # noqa: BLE001 - closing: nothing left to report to
                fut.cancel()
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)

    # --- calls -----------------------------------------------------------------
    def call(self, server: str, tool: str, arguments: dict[str, Any], *, timeout_s: float) -> Any:
        """The tool's JSON result; raises ``McpCallError`` (timeout / unavailable / tool_error)."""
        if server in self.errors:
            raise McpCallError(self.errors[server], kind="unavailable")
        client = self._clients.get(server)
        if client is None or self._loop is None:
            raise McpCallError(f"MCP server '{server}' is not connected", kind="unavailable")
        if tool not in self.tools.get(server, {}):
            offered = ", ".join(sorted(self.tools.get(server, {}))) or "none"
            raise McpCallError(
                f"MCP server '{server}' has no tool '{tool}' (it offers: {offered})",
                kind="unavailable",
            )
        fut = asyncio.run_coroutine_threadsafe(client.call_tool(tool, arguments), self._loop)
        try:
            result = fut.result(timeout=timeout_s)
        except FutureTimeout as exc:
            fut.cancel()
            raise McpCallError(
                f"{server}/{tool} timed out after {timeout_s:g} s", kind="timeout"
            ) from exc
        except Exception as exc:  # noqa: BLE001 - transport failures become the tool's error
            self.broken = True
            raise McpCallError(
                f"{server}/{tool} failed: {_reason(exc)}", kind="unavailable"
            ) from exc
        text = "".join(getattr(c, "text", "") for c in result.content or [])
        if result.is_error:
            raise McpCallError(text or f"{server}/{tool} returned an error", kind="tool_error")
        if result.structured_content is not None:
            return result.structured_content
        return json.loads(text) if text.strip()[:1] in ("{", "[") else {"text": text}


class _Shared:
    def __init__(self, hub: McpHub) -> None:
        self.hub, self.holders, self.idle_timer = hub, 0, None

    @property
    def reusable(self) -> bool:
        return not self.hub.errors and not self.hub.broken and self.hub._loop is not None


_SHARED: dict[str, _Shared] = {}
_SHARED_LOCK = threading.Lock()


class SharedHub:
    """One agent's hold on a shared :class:`McpHub`: its tools, errors and calls; ``close`` lets
    go."""

    def __init__(self, key: str, shared: _Shared) -> None:
        self._key, self._shared, self._closed = key, shared, False

    @property
    def tools(self) -> dict[str, dict[str, dict[str, Any]]]:
        return self._shared.hub.tools

    @property
    def errors(self) -> dict[str, str]:
        return self._shared.hub.errors

    def call(self, server: str, tool: str, arguments: dict[str, Any], *, timeout_s: float) -> Any:
        return self._shared.hub.call(server, tool, arguments, timeout_s=timeout_s)

    def close(self) -> None:
        with _SHARED_LOCK:
            if self._closed:
                return
            self._closed = True
            shared = self._shared
            shared.holders -= 1
            if shared.holders > 0:
                return
            if _SHARED.get(self._key) is shared and shared.reusable:
                shared.idle_timer = threading.Timer(
                    IDLE_CLOSE_S, _close_if_idle, (self._key, shared)
                )
                shared.idle_timer.daemon = True
                shared.idle_timer.start()
                return
            if _SHARED.get(self._key) is shared:
                del _SHARED[self._key]
        shared.hub.close()


def _close_if_idle(key: str, shared: _Shared) -> None:
    with _SHARED_LOCK:
        if shared.holders > 0 or _SHARED.get(key) is not shared:
            return
        del _SHARED[key]
    shared.hub.close()


def shared_hub(
    servers: dict[str, McpServerSpec], *, env: dict[str, str] | None = None
) -> SharedHub:
    """A hold on this process's hub for ``servers`` with ``env``, started on first use (see the
    module)."""
    key = json.dumps(
        {
            "pid": os.getpid(),
            "env": sorted((env or {}).items()),
            "servers": {name: asdict(spec) for name, spec in sorted(servers.items())},
        },
        sort_keys=True,
        default=list,
    )
    stale = None
    with (
        _SHARED_LOCK
    ):  # held while a new hub connects: a second agent for the same servers waits for it
        shared = _SHARED.get(key)
        if shared is not None and not shared.reusable:
            if shared.holders == 0:
                stale = shared
            del _SHARED[key]
            shared = None
        if shared is None:
            shared = _SHARED[key] = _Shared(McpHub(servers, env=env))
        if shared.idle_timer is not None:
            shared.idle_timer.cancel()
            shared.idle_timer = None
        shared.holders += 1
        handle = SharedHub(key, shared)
    if stale is not None:
        stale.hub.close()
    return handle


@atexit.register
def _close_shared_hubs() -> None:
    with _SHARED_LOCK:
        hubs = [shared.hub for shared in _SHARED.values()]
        _SHARED.clear()
    for hub in hubs:
        hub.close()


def _reason(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
