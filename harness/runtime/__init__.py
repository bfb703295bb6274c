"""The agent runtime: runs a live-room request under a Harness with a policy.

``Agent(bundle=..., policy=..., catalogue=...).run(request) -> Trajectory``;
built-in tools, hook implementations, the MCP client and failure injection live
in the modules beside it. At import it checks that every built-in tool of
``harness.tool_catalogue`` and every hook type of ``harness.hook_catalogue``
has an implementation, so a catalogue entry can never reach a user unimplemented.
"""

from harness.runtime.agent import Agent
from harness.runtime.builtin_tools import missing_builtins
from harness.runtime.failures import FailureInjection
from harness.runtime.hook_impls import missing_hook_types
from harness.runtime.trajectory import Trajectory

_missing = missing_builtins() + missing_hook_types()
if _missing:
    raise ImportError(f"harness.runtime has no implementation for: {', '.join(_missing)}")

__all__ = ["Agent", "FailureInjection", "Trajectory"]
