"""Runs one tool call: built-in or MCP, with its timeout and injected failures.

Every data tool call runs on a worker thread and is waited for with the tool's
timeout (``timeout_s`` in tools.yaml, else the prompt constraint
``tool_timeout_s``). Results travel as JSON text, as they would from a service,
so an injected *malformed* result is a real unparsable payload. Errors are
returned in the record, never raised: a failing tool never crashes a request.
"""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from harness.runtime.builtin_tools import BUILTIN_IMPLS, ToolContext, ToolInputError
from harness.runtime.mcp_client import McpCallError, McpHub
from harness.tools import ToolSpec


@dataclass
class ToolOutcome:
    result: Any = None
    error: str | None = None
    error_kind: str | None = None
    injected: str | None = None
    latency_s: float = 0.0


def _corrupt(wire: str) -> str:
    """A truncated payload, as a crashed upstream service would send."""
    return wire[: max(1, len(wire) // 2)] + "\x00<!-- upstream error"


class ToolRunner:
    def __init__(
        self, *, hub: McpHub | None, default_timeout_s: float, max_workers: int = 8
    ) -> None:
        self.hub = hub
        self.default_timeout_s = default_timeout_s
        self.pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="tool")

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)

    def timeout_for(self, spec: ToolSpec) -> float:
        return float(spec.timeout_s or self.default_timeout_s)

    def run(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        ctx: ToolContext,
        *,
        injected: str | None = None,
        timeout_s: float | None = None,
    ) -> ToolOutcome:
        started = time.perf_counter()
        timeout = timeout_s if timeout_s is not None else self.timeout_for(spec)
        outcome = self._run(spec, arguments, ctx, injected=injected, timeout=timeout)
        outcome.injected = injected
        outcome.latency_s = time.perf_counter() - started
        return outcome

    def _run(
        self,
        spec: ToolSpec,
        arguments: dict[str, Any],
        ctx: ToolContext,
        *,
        injected: str | None,
        timeout: float,
    ) -> ToolOutcome:
        if injected == "permission_denied":
            return ToolOutcome(
                error=f"permission denied: this room may not call {spec.name}",
                error_kind="permission_denied",
            )

        def job() -> str:
            if injected == "timeout":
                time.sleep(timeout + 0.05)  # overruns the wait below, as a hung service would
            if spec.builtin is not None:
                data = BUILTIN_IMPLS[spec.builtin](ctx, dict(arguments))
            else:
                if self.hub is None:
                    raise McpCallError(
                        f"no MCP connection for server '{spec.mcp_server}'", kind="unavailable"
                    )
                data = self.hub.call(
                    spec.mcp_server, spec.mcp_tool, dict(arguments), timeout_s=timeout
                )
            wire = json.dumps(data, ensure_ascii=False, default=str)
            return _corrupt(wire) if injected == "malformed" else wire

        future = self.pool.submit(job)
        try:
            wire = future.result(timeout=timeout)
        except FutureTimeout:
            future.cancel()
            return ToolOutcome(
                error=f"{spec.name} timed out after {timeout:g} s", error_kind="timeout"
            )
        except ToolInputError as exc:
            return ToolOutcome(error=str(exc), error_kind="tool_error")
        except McpCallError as exc:
            return ToolOutcome(error=str(exc), error_kind=exc.kind)
        except Exception as exc:  # noqa: BLE001 - a broken tool is reported, not raised
            return ToolOutcome(
                error=f"{spec.name} failed: {type(exc).__name__}: {exc}", error_kind="tool_error"
            )
        try:
            return ToolOutcome(result=json.loads(wire))
        except json.JSONDecodeError as exc:
            return ToolOutcome(
                error=f"{spec.name} returned a malformed result ({exc.msg} at char {exc.pos})",
                error_kind="malformed",
            )
