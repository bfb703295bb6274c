"""ScriptedPolicy: replays given model outputs, for tests and gold-trajectory replay.

A script is a list of outputs, or a dict of request id -> list. Each output is
either the raw text a model would write (text protocol) or a dict
``{"text": ..., "tool_calls": [{"name", "arguments"}], "delay_s": 0.2}`` where
``tool_calls`` are treated as native calls and ``delay_s`` simulates model time.
The runtime calls ``begin_request(request_id)`` before each request, which
rewinds the script, so the same policy answers many requests deterministically.
A keyed script answers a variant of a case (request id ``<id>~<variant>``: the
Harness-Variant and compatibility sets) with its source case's outputs when it has
none of its own: the script stands in for a model that learnt the original
Harness's names and wording. The cursor is kept per thread, so one ScriptedPolicy
serves concurrent requests (each on its own thread, as the agent runs them) when
the script is keyed by request id.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from harness.policies.base import GenerationSettings, Policy, PolicyError, PolicyOutput, ToolCall
from harness.userfiles import InputFileError, read_json


def _approx_tokens(text: str) -> int:
    return max(1, len(text) // 4) if text else 0


_OUTPUT_KEYS = ("text", "tool_calls", "delay_s", "raise")
MAX_DELAY_S = 600.0
# request ids named when a keyed script has no outputs for a request (a dev-set script has 482)
ANSWERS_SHOWN = 3


def _tool_call_problems(calls: Any, where: str) -> list[str]:
    if not isinstance(calls, list):
        return [f"{where}: must be a list of {{name, arguments}} objects"]
    problems = []
    for i, call in enumerate(calls):
        at = f"{where}[{i}]"
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            problems.append(
                f"{at}: must be an object with a string name (and arguments, an object)"
            )
        elif not isinstance(call.get("arguments", {}), dict):
            problems.append(f"{at}.arguments: must be an object of argument name -> value")
        elif not isinstance(call.get("id", ""), str):
            problems.append(f"{at}.id: must be a string")
    return problems


def _output_problems(item: Any, where: str) -> list[str]:
    if isinstance(item, str):
        return []
    if not isinstance(item, dict):
        return [
            f"{where}: an output is the model's text or an object with {', '.join(_OUTPUT_KEYS)}"
        ]
    problems = [
        f"{where}.{key}: unknown field; valid fields are {', '.join(_OUTPUT_KEYS)}"
        for key in item
        if key not in _OUTPUT_KEYS
    ]
    for key in ("text", "raise"):
        if key in item and not isinstance(item[key], str):
            problems.append(f"{where}.{key}: must be a string")
    delay = item.get("delay_s", 0)
    if (
        isinstance(delay, bool)
        or not isinstance(delay, int | float)
        or not 0 <= delay <= MAX_DELAY_S
    ):
        problems.append(f"{where}.delay_s: must be a number of seconds from 0 to {MAX_DELAY_S:g}")
    if "tool_calls" in item:
        problems += _tool_call_problems(item["tool_calls"], f"{where}.tool_calls")
    return problems


def script_problems(data: Any) -> list[str]:
    """What is wrong with a script (the JSON of a script file), one ``field: message`` each.

    Valid: a list of outputs; ``{"outputs": [...]}``; an object of request id -> list of
    outputs; or a trajectory record (its ``model_calls`` are replayed).
    """
    if isinstance(data, dict) and "model_calls" in data:
        calls = data["model_calls"]
        if not isinstance(calls, list):
            return ["model_calls: must be a list of model call records"]
        problems = []
        for i, call in enumerate(calls):
            if not isinstance(call, dict):
                problems.append(f"model_calls[{i}]: must be an object (a model call record)")
                continue
            if not isinstance(call.get("text", ""), str):
                problems.append(f"model_calls[{i}].text: must be a string")
            problems += _tool_call_problems(
                call.get("native_tool_calls") or [], f"model_calls[{i}].native_tool_calls"
            )
        return problems
    if isinstance(data, dict) and "outputs" in data:
        data = data["outputs"]
        if not isinstance(data, list):
            return ["outputs: must be a list of outputs"]
    if isinstance(data, list):
        return [p for i, item in enumerate(data) for p in _output_problems(item, f"[{i}]")]
    if isinstance(data, dict):
        problems = []
        for request_id, outputs in data.items():
            if not isinstance(outputs, list):
                problems.append(
                    f"{request_id}: must be the list of outputs for request {request_id!r}"
                )
                continue
            problems += [
                p
                for i, item in enumerate(outputs)
                for p in _output_problems(item, f"{request_id}[{i}]")
            ]
        return problems
    return [
        "a script is a JSON list of outputs, an object of request id -> list of outputs, "
        "or a trajectory record"
    ]


class ScriptedPolicy(Policy):
    """Replays outputs in order; raises ``PolicyError`` when the script runs out."""

    def __init__(self, script: list[Any] | dict[str, list[Any]], *, name: str = "scripted") -> None:
        if not isinstance(script, list | dict):
            raise TypeError("a script is a list of outputs or a dict of request id -> outputs")
        self.name = name
        self.script = script
        self._local = threading.local()
        self.calls: list[list[dict[str, Any]]] = []  # messages of every call, for tests

    @classmethod
    def load(cls, path: str | Path) -> ScriptedPolicy:
        """Read a script file: a JSON list / object, or a trajectory JSON (its model texts)."""
        path = Path(path)
        data = read_json(path, what="policy script")  # InputFileError (a ValueError) names the file
        problems = script_problems(data)
        if problems:
            raise InputFileError(
                f"{path}: not a policy script: {'; '.join(problems[:5])}"
                + (f"; ... and {len(problems) - 5} more" if len(problems) > 5 else "")
            )
        if isinstance(data, dict) and "model_calls" in data:
            return cls.from_trajectory(data, name=f"scripted:{path.name}")
        if isinstance(data, dict) and "outputs" in data:
            data = data["outputs"]
        return cls(data, name=f"scripted:{path.name}")

    @classmethod
    def from_trajectory(cls, trajectory: dict[str, Any], *, name: str = "replay") -> ScriptedPolicy:
        """Replay a recorded (e.g. gold) trajectory's model outputs in the same order."""
        outputs = []
        for call in trajectory.get("model_calls", []):
            native = call.get("native_tool_calls") or []
            outputs.append(
                {"text": call.get("text", ""), "tool_calls": native}
                if native
                else call.get("text", "")
            )
        return cls(outputs, name=name)

    @property
    def _outputs(self) -> list[Any]:
        default = self.script if isinstance(self.script, list) else []
        return getattr(self._local, "outputs", default)

    @property
    def _cursor(self) -> int:
        return getattr(self._local, "cursor", 0)

    @_cursor.setter
    def _cursor(self, value: int) -> None:
        self._local.cursor = value

    def answers(self) -> str:
        """Which requests the script answers, in one line: any request, or how many ids and the
        first few."""
        if isinstance(self.script, list):
            return "any request (one list of outputs)"
        ids = sorted(self.script)
        if not ids:
            return "no request (the script is empty)"
        shown = ", ".join(ids[:ANSWERS_SHOWN]) + (", ..." if len(ids) > ANSWERS_SHOWN else "")
        return f"{len(ids)} request id{'s' if len(ids) != 1 else ''} ({shown})"

    def begin_request(self, request_id: str) -> None:
        if isinstance(self.script, dict):
            if request_id not in self.script and "~" in request_id:
                request_id = request_id.split("~", 1)[0]  # a variant of a case the script knows
            if request_id not in self.script:
                raise PolicyError(
                    f"the script has no outputs for request {request_id!r}; "
                    f"it answers {self.answers()}"
                )
            self._local.outputs = self.script[request_id]
        self._cursor = 0

    def generate(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        settings: GenerationSettings | None = None,
    ) -> PolicyOutput:
        started = time.perf_counter()
        self.calls.append(messages)
        if self._cursor >= len(self._outputs):
            raise PolicyError(
                f"scripted policy ran out of outputs after {len(self._outputs)} call(s)"
            )
        item = self._outputs[self._cursor]
        self._cursor += 1
        native: list[ToolCall] = []
        if isinstance(item, dict):
            if item.get("delay_s"):
                time.sleep(float(item["delay_s"]))
            if item.get("raise"):
                raise PolicyError(str(item["raise"]))
            text = str(item.get("text", ""))
            native = [
                ToolCall(c["name"], dict(c.get("arguments", {})), c.get("id", ""))
                for c in item.get("tool_calls", [])
            ]
        else:
            text = str(item)
        prompt = "".join(str(m.get("content", "")) for m in messages)
        latency = time.perf_counter() - started
        return PolicyOutput(
            text=text,
            tool_calls=native,
            input_tokens=_approx_tokens(prompt),
            output_tokens=_approx_tokens(text),
            latency_s=latency,
            ttft_s=latency,
            finish_reason="stop",
        )
