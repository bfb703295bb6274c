"""The agent loop of docs/architecture.md §4: one request under one Harness with one policy.

``Agent(bundle=..., policy=..., catalogue=...).run(request) -> Trajectory``.

1. validate the request and run the ``input`` hooks;
2. assemble the system prompt from the Harness pipeline and the request context;
3. up to ``max_rounds`` model rounds: the policy loads skills, calls one or more
   tools (each with its timeout, checked by ``before_tool`` / ``after_tool``
   hooks), or proposes a final reply;
4. a proposed reply passes the stop gate (a reply skill loaded, then the
   ``stop`` hooks); a failed check sends the hook's message into the next round,
   at most ``retry.max_retries`` times;
5. round limit, trajectory time budget, or a hook's ``fallback`` / ``suppress``
   end the request with the conservative fallback reply or silence.

The trajectory budget (``trajectory_budget_s``) covers the request from its ``input`` hooks to its
outcome: every round's model call, tool calls and hooks (``timings["total_s"]``; a model call and a
tool call each get at most the time left in it). Before it starts, the policy is prepared
(``Policy.prepare``: the model loaded, the Harness prefix put in its cache), recorded as
``timings["setup_s"]`` and ``timings["setup"]``; that, and what a caller does with the record
afterwards (``--post``), is outside the budget (``BUDGET_COVERS``, docs/runtime.md).

Nothing a model, tool or server does raises out of ``run``: every failure is
recorded in the trajectory and contained. Only an invalid request (a user
error) raises ``DocumentValidationError``.

``on_step`` (optional) is called with the trajectory each time a step is
recorded (a model call returned, a tool call or skill load ran, hooks decided),
so a caller can show the steps while the request runs (the studio's
playground). What it raises is not contained: it ends the run and propagates
out of ``run`` (a cancelled job stops there).
"""

from __future__ import annotations

import copy
import dataclasses
import datetime as dt
import hashlib
import json
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from harness.bundle import Bundle
from harness.hooks import HookSpec
from harness.livestream import Catalogue, Request, demo_catalogue
from harness.mcp_registry import McpRegistry
from harness.mcp_server.constants import CATALOGUE_ENV
from harness.policies.base import GenerationSettings, Policy, PolicyOutput, ToolCall
from harness.policies.text_protocol import parse_reply
from harness.runtime.builtin_tools import ToolContext, skill_name_argument
from harness.runtime.context import (
    context_slots,
    grounding_text,
    system_prompt,
    tool_payload,
    user_message,
)
from harness.runtime.failures import FailureInjection, FailureInjector
from harness.runtime.hook_impls import HOOK_IMPLS, HookCheck, render_message
from harness.runtime.mcp_client import SharedHub, shared_hub
from harness.runtime.tool_runner import ToolRunner
from harness.runtime.trajectory import (
    HookDecisionRecord,
    ModelCallRecord,
    SkillLoadRecord,
    ToolCallRecord,
    Trajectory,
)

#: What the trajectory budget covers, as each record says (``settings["budget_covers"]``).
BUDGET_COVERS = (
    "timings.total_s: the request from its input hooks to its outcome (model calls, tools, "
    "hooks); not timings.setup_s before it (loading the model, putting the Harness prefix in its "
    "cache) nor posting the record"
)
DECISION_OF_ACTION = {"retry": "block", "fallback": "fallback", "suppress": "suppress"}
REPLY_SKILL_GATE_MESSAGE = (
    "Load the reply skill that fits this comment with load_skill before giving your final reply."
)
EMPTY_REPLY_MESSAGE = "Your answer was empty. Give the viewer a reply, or call a tool."
BAD_CALL_MESSAGE = (
    "Your tool call could not be read ({details}). Write it as "
    '<tool_call>{{"name": ..., "arguments": {{...}}}}</tool_call>.'
)


def demonstration_messages(trajectory: dict[str, Any]) -> list[dict[str, Any]]:
    """A recorded trajectory as chat turns: its comment, calls, tool responses and reply."""
    calls = [c for c in trajectory.get("model_calls", []) if c.get("error") is None]
    if not calls:
        return []
    last = calls[-1]
    turns = [dict(m) for m in last["messages"] if m.get("role") != "system"]
    return [*turns, {"role": "assistant", "content": last["text"]}]


class _ObserverRaised(Exception):
    """Carries what ``on_step`` raised past the loop's containment of runtime errors."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


class _Run:
    """The state of one request while it runs."""

    def __init__(self, agent: Agent, request: Request) -> None:
        self.request = request
        self.catalogue = request.catalogue or agent.catalogue
        self.room = copy.deepcopy(request.room)
        self.started = time.perf_counter()
        self.ctx = ToolContext(
            catalogue=self.catalogue, room=self.room, request=request, skills=agent.bundle.skills
        )
        self.injector = FailureInjector(agent.failure_injection, request.id)
        self.grounding = [grounding_text(request, self.catalogue, self.room)]
        self.messages: list[dict[str, Any]] = []
        self.model_s = 0.0
        self.tool_s = 0.0
        self.silent_reason: str | None = None


_CATALOGUE_DIR: tempfile.TemporaryDirectory | None = None
_CATALOGUE_LOCK = threading.Lock()


def catalogue_file(catalogue: Catalogue) -> Path:
    """The catalogue as the file an MCP server prices against (``HARNESS_CATALOGUE``), named by its
    content in a folder this process removes when it exits: agents with the same catalogue give
    their servers the same file, so they can share one server (``shared_hub``)."""
    global _CATALOGUE_DIR
    text = json.dumps(catalogue.to_dict(), indent=2, ensure_ascii=False) + "\n"
    with _CATALOGUE_LOCK:
        if _CATALOGUE_DIR is None or not Path(_CATALOGUE_DIR.name).is_dir():
            _CATALOGUE_DIR = tempfile.TemporaryDirectory(prefix="harness-catalogues-")
        path = (
            Path(_CATALOGUE_DIR.name)
            / f"catalogue-{hashlib.sha256(text.encode()).hexdigest()[:24]}.json"
        )
        if not path.exists():
            path.write_text(text, encoding="utf-8")
    return path


class Agent:
    """Runs requests under one Harness with one policy. Use as a context manager
    (or call ``close()``) so MCP server processes are stopped."""

    def __init__(
        self,
        *,
        bundle: Bundle,
        policy: Policy,
        catalogue: Catalogue | None = None,
        failure_injection: FailureInjection | None = None,
        generation: GenerationSettings | None = None,
        connect_mcp: bool = True,
        mcp_env: dict[str, str] | None = None,
        mcp_registry: McpRegistry | None = None,
        trust_harness_commands: bool = False,
        max_rounds: int | None = None,
        trajectory_budget_s: float | None = None,
        tool_timeout_s: float | None = None,
        demonstrations: list[dict[str, Any]] | None = None,
        on_step: Callable[[Trajectory], None] | None = None,
    ) -> None:
        if not isinstance(policy, Policy):
            raise TypeError(
                f"policy: {type(policy).__name__} is not a harness.policies.Policy; "
                "subclass it and implement generate()"
            )
        self.bundle = bundle
        self.policy = policy
        self.on_step = on_step
        self.catalogue = catalogue or demo_catalogue()
        self.failure_injection = failure_injection or FailureInjection()
        self.generation = generation
        constraints = bundle.prompt.constraints
        self.max_rounds = int(max_rounds or constraints["max_rounds"])
        self.budget_s = float(trajectory_budget_s or constraints["trajectory_budget_s"])
        self.tool_timeout_s = float(tool_timeout_s or constraints["tool_timeout_s"])
        self.retry = bundle.hook_set.retry
        self.tools = {t.name: t for t in bundle.tools}
        self.openai_tools = [t.openai_schema() for t in bundle.tools]
        self.reply_skill_names = [s.name for s in bundle.reply_skills()]
        # In-context examples (recorded trajectories) shown before the request, for small models.
        self.demonstration_messages = [
            m for t in demonstrations or [] for m in demonstration_messages(t)
        ]
        self._shared_prefix: str | None = None
        self.hub: SharedHub | None = None
        if bundle.mcp_servers and connect_mcp:
            # Resolved before anything starts: an unregistered or untrusted inline server
            # refuses the whole Agent (McpServerRefused), and no process is started.
            registry = mcp_registry if mcp_registry is not None else McpRegistry.default()
            servers = registry.resolve(
                bundle.tool_registry, trust_harness_commands=trust_harness_commands
            )
            env = dict(mcp_env or {})
            if CATALOGUE_ENV not in env:
                env[CATALOGUE_ENV] = str(catalogue_file(self.catalogue))
            self.hub = shared_hub(servers, env=env)
        self.runner = ToolRunner(hub=self.hub, default_timeout_s=self.tool_timeout_s)

    # --- lifecycle -------------------------------------------------------------
    def close(self) -> None:
        if self.hub is not None:
            self.hub.close()
        self.runner.close()

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def mcp_status(self) -> dict[str, Any]:
        """Per MCP server: the tools discovered at start-up, or why it is unavailable."""
        if self.hub is None:
            return {name: {"error": "not connected"} for name in self.bundle.mcp_servers}
        status: dict[str, Any] = {}
        for name in self.bundle.mcp_servers:
            if name in self.hub.errors:
                status[name] = {"error": self.hub.errors[name]}
                continue
            offered = self.hub.tools.get(name, {})
            status[name] = {"tools": sorted(offered)}
            missing = sorted(
                t.mcp_tool
                for t in self.bundle.tools
                if t.mcp_server == name and t.mcp_tool not in offered
            )
            if missing:  # declared in tools.yaml, not offered: calls to them fail with this reason
                status[name]["missing"] = missing
        return status

    # --- the loop --------------------------------------------------------------
    def run(self, request: Request | dict[str, Any]) -> Trajectory:
        if not isinstance(request, Request):
            request = Request.from_dict(request, catalogue=self.catalogue)
        # before the budget's clock starts: the model loaded, the Harness prefix in its cache
        setup_started = time.perf_counter()
        setup: dict[str, Any] = {}
        begun = False
        try:
            self.policy.begin_request(request.id)
            begun = True
            setup = self.policy.prepare(self.shared_prefix(), tools=self.openai_tools) or {}
        except Exception as exc:  # noqa: BLE001 - the first model call meets it again, recorded
            setup = {"error": f"{type(exc).__name__}: {exc}"}
        setup_s = time.perf_counter() - setup_started
        run = _Run(self, request)
        traj = Trajectory(
            request_id=request.id,
            harness_name=self.bundle.name,
            harness_digest=self.bundle.digest,
            policy=self.policy.name or type(self.policy).__name__,
            request=request.to_dict(),
            settings={
                "max_rounds": self.max_rounds,
                "trajectory_budget_s": self.budget_s,
                "budget_covers": BUDGET_COVERS,
                "tool_timeout_s": self.tool_timeout_s,
                "max_retries": self.retry.max_retries,
                "generation": self.generation.to_dict() if self.generation else None,
                "failure_injection": dict(self.failure_injection.__dict__)
                if self.failure_injection.active
                else None,
            },
        )
        traj.timings["started_at"] = dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")
        traj.timings["setup_s"] = setup_s
        traj.timings["setup"] = setup
        try:
            if not begun:
                self.policy.begin_request(request.id)
            self._loop(run, traj)
        except _ObserverRaised as raised:
            raise raised.error from None
        except Exception as exc:  # noqa: BLE001 - trajectory-level recovery: never crash a request
            self._end(run, traj, "fallback", f"runtime error: {type(exc).__name__}: {exc}")
        total = time.perf_counter() - run.started
        traj.final_room = run.room.to_dict()
        traj.timings.update(
            {
                "total_s": total,
                "model_s": run.model_s,
                "tool_s": run.tool_s,
                "runtime_s": max(0.0, total - run.model_s - run.tool_s),
                "ttft_first_call_s": traj.model_calls[0].ttft_s if traj.model_calls else None,
            }
        )
        return traj

    def shared_prefix(self) -> str:
        """The text every request's system message starts with under this Harness (computed
        once)."""
        if self._shared_prefix is None:
            from harness.prompt_sharing import shared_prefix

            self._shared_prefix = shared_prefix(self.bundle)
        return self._shared_prefix

    def _step_recorded(self, traj: Trajectory) -> None:
        if self.on_step is not None:
            try:
                self.on_step(traj)
            except Exception as exc:  # noqa: BLE001 - the caller's own error, passed back to it
                raise _ObserverRaised(exc) from exc

    def _elapsed(self, run: _Run) -> float:
        return time.perf_counter() - run.started

    def _over_budget(self, run: _Run) -> bool:
        return self._elapsed(run) > self.budget_s

    def _check(self, run: _Run, event: str, traj: Trajectory, **fields: Any) -> HookCheck:
        return HookCheck(
            event=event,
            request=run.request,
            room=run.room,
            constraints=self.bundle.prompt.constraints,
            link_ids=run.catalogue.link_ids,
            tool_calls=traj.tool_calls,
            loaded_skills=traj.loaded_skills,
            reply_skills=self.reply_skill_names,
            **fields,
        )

    def _hooks(
        self, run: _Run, traj: Trajectory, event: str, check: HookCheck, target: str = ""
    ) -> tuple[tuple[str, HookSpec, str] | None, list[str]]:
        """Run the event's hooks: (first terminal decision, block messages)."""
        terminal = None
        blocks: list[str] = []
        for hook in self.bundle.hook_set.at(event):
            if target and not hook.matches(target):
                continue
            result = HOOK_IMPLS[hook.type](hook, check)
            if result.ok and result.drop_comments and event == "input":
                drop = set(result.drop_comments)
                run.request = dataclasses.replace(
                    run.request,
                    comments=[c for i, c in enumerate(run.request.comments) if i not in drop],
                )
                check = self._check(run, event, traj)
                decision, message = "allow", result.details.get("details", "")
            elif result.ok:
                decision, message = "allow", ""
            else:
                decision = DECISION_OF_ACTION[hook.action]
                # tool_error_guidance carries its text in params.message
                template = hook.params.get("message") or hook.message
                message = render_message(template, {"tool": target, **result.details})
            traj.hook_decisions.append(
                HookDecisionRecord(
                    seq=traj.next_seq(),
                    round=traj.rounds,
                    event=event,
                    hook_id=hook.id,
                    type=hook.type,
                    decision=decision,
                    message=message,
                    target=target,
                )
            )
            if decision == "block":
                blocks.append(message)
            elif decision != "allow" and terminal is None:
                terminal = (decision, hook, message)
        if self.bundle.hook_set.at(event):
            self._step_recorded(traj)
        return terminal, blocks

    def _runtime_decision(
        self, traj: Trajectory, event: str, hook_id: str, htype: str, message: str
    ) -> None:
        traj.hook_decisions.append(
            HookDecisionRecord(
                seq=traj.next_seq(),
                round=traj.rounds,
                event=event,
                hook_id=hook_id,
                type=htype,
                decision="block",
                message=message,
            )
        )
        self._step_recorded(traj)

    def _end(
        self,
        run: _Run,
        traj: Trajectory,
        outcome: str,
        reason: str,
        hook: HookSpec | None = None,
        reply: str = "",
    ) -> None:
        traj.outcome, traj.outcome_reason = outcome, reason
        if outcome == "replied":
            traj.reply = reply
            private = any(
                self.bundle.skills[s].metadata.get("route") == "private"
                for s in traj.loaded_skills
                if s in self.bundle.skills and self.bundle.skills[s].kind == "reply"
            )
            traj.route = "private" if private else "public"
        elif outcome == "fallback":
            traj.reply = (
                hook.fallback_reply if hook and hook.fallback_reply else self.retry.fallback_reply
            )
            traj.route = "public"
        else:  # silent (the model chose it) or suppressed (a hook or the limits did)
            traj.reply = ""
            traj.route = "silent"

    def _exhausted(self, run: _Run, traj: Trajectory, reason: str) -> None:
        outcome = "suppressed" if self.retry.on_exhausted == "suppress" else "fallback"
        self._end(run, traj, outcome, reason)

    def _finish_terminal(
        self, run: _Run, traj: Trajectory, terminal: tuple[str, HookSpec, str]
    ) -> None:
        decision, hook, message = terminal
        outcome = "fallback" if decision == "fallback" else "suppressed"
        self._end(run, traj, outcome, f"hook {hook.id} ({hook.type}): {message}", hook=hook)

    def _feedback(self, messages: list[str]) -> dict[str, str]:
        prefix = self.retry.message_prefix
        text = "\n".join(f"{prefix}{m}" if prefix else m for m in messages)
        return {"role": "user", "content": text}

    def _loop(self, run: _Run, traj: Trajectory) -> None:
        terminal, _ = self._hooks(run, traj, "input", self._check(run, "input", traj))
        if terminal:
            self._finish_terminal(run, traj, terminal)
            return
        # the system prompt is assembled at the top of each round (the skills loaded change it)
        run.messages = [{"role": "system", "content": ""}, *self._request_messages(run)]
        for round_no in range(1, self.max_rounds + 1):
            if self._over_budget(run):
                self._exhausted(
                    run,
                    traj,
                    f"trajectory budget of {self.budget_s:g} s used up before round {round_no}",
                )
                return
            traj.rounds = round_no
            run.messages[0] = self._system_message(run, traj.loaded_skills)
            terminal, _ = self._hooks(
                run,
                traj,
                "before_model",
                self._check(run, "before_model", traj, messages=run.messages),
            )
            if terminal:
                self._finish_terminal(run, traj, terminal)
                return
            output = self._call_model(run, traj, round_no)
            if output is None:
                continue  # per-call fallback: the failed call is recorded, the next round retries
            if self._over_budget(run):
                self._exhausted(
                    run,
                    traj,
                    f"trajectory budget of {self.budget_s:g} s used up during round {round_no}",
                )
                return
            if self._round(run, traj, output, round_no):
                return
        self._exhausted(
            run, traj, f"round limit of {self.max_rounds} reached without an accepted reply"
        )

    def _system_message(self, run: _Run, loaded_skills: list[str]) -> dict[str, str]:
        """The system prompt of a round: the Harness's pipeline over the request's context."""
        slots = context_slots(
            bundle=self.bundle,
            request=run.request,
            catalogue=run.catalogue,
            room=run.room,
            loaded_skills=loaded_skills,
        )
        return {"role": "system", "content": system_prompt(self.bundle, slots)}

    def _request_messages(self, run: _Run) -> list[dict[str, Any]]:
        """What follows the system prompt in the first round: the demonstrations, the request."""
        return [
            *self.demonstration_messages,
            {"role": "user", "content": user_message(run.request)},
        ]

    def warm_up(self, request: Request | dict[str, Any]) -> PolicyOutput:
        """One model call of one new token on what ``request``'s first round would send, outside
        any trajectory (no hook runs, nothing is recorded). A policy with a prefix cache
        (llama.cpp's slots) then holds this Harness's system prompt, which every request's first
        call starts with, so a process's first request does not prefill it within its budget (the
        demo on 2 cores: the first call's time to first token 2.7 s cold, 0.4 s with the prefix
        cached; docs/workers.md)."""
        if not isinstance(request, Request):
            request = Request.from_dict(request, catalogue=self.catalogue)
        run = _Run(self, request)
        return self.policy.generate(
            [self._system_message(run, []), *self._request_messages(run)],
            tools=self.openai_tools,
            settings=GenerationSettings(temperature=0.0, max_new_tokens=1),
        )

    def _call_model(self, run: _Run, traj: Trajectory, round_no: int) -> PolicyOutput | None:
        messages = [dict(m) for m in run.messages]
        record = ModelCallRecord(seq=traj.next_seq(), round=round_no, messages=messages, text="")
        traj.model_calls.append(record)
        started = time.perf_counter()
        try:
            extra = {}
            if self.policy.accepts_timeout:  # a model call must not outlive the budget
                extra["timeout_s"] = max(0.1, self.budget_s - self._elapsed(run))
            output = self.policy.generate(
                messages, tools=self.openai_tools, settings=self.generation, **extra
            )
        except Exception as exc:  # noqa: BLE001 - one failed model call is contained
            record.error = f"{type(exc).__name__}: {exc}"
            record.latency_s = time.perf_counter() - started
            run.model_s += record.latency_s
            self._step_recorded(traj)
            return None
        record.text = output.text
        record.native_tool_calls = [c.to_dict() for c in output.tool_calls]
        record.input_tokens, record.output_tokens = output.input_tokens, output.output_tokens
        record.latency_s = output.latency_s or (time.perf_counter() - started)
        record.ttft_s, record.decode_tokens_per_s = output.ttft_s, output.decode_tokens_per_s
        record.finish_reason = output.finish_reason
        record.usage_reported = output.usage_reported
        record.cached_tokens = output.cached_tokens
        run.model_s += time.perf_counter() - started
        self._step_recorded(traj)
        return output

    def _round(self, run: _Run, traj: Trajectory, output: PolicyOutput, round_no: int) -> bool:
        """Handle one model output; True when the request is finished."""
        parsed = parse_reply(output.text)
        if parsed.reasoning:
            traj.reasoning = (traj.reasoning + "\n" + parsed.reasoning).strip()
        native = bool(output.tool_calls)
        calls = list(output.tool_calls) if native else list(parsed.tool_calls)
        errors = list(parsed.errors) if not native else []
        known = []
        for call in calls:
            if call.name in self.tools:
                known.append(call)
            else:
                errors.append(f"unknown tool {call.name!r}; tools: {', '.join(self.tools)}")
        check = self._check(run, "after_model", traj, parse_errors=errors)
        terminal, blocks = self._hooks(run, traj, "after_model", check)
        if terminal:
            self._finish_terminal(run, traj, terminal)
            return True
        if errors and not any(
            h.type == "tool_call_format" for h in self.bundle.hook_set.at("after_model")
        ):
            message = render_message(BAD_CALL_MESSAGE, {"details": "; ".join(errors)})
            self._runtime_decision(
                traj, "after_model", "runtime.tool-call-format", "tool_call_format", message
            )
            blocks.append(message)
        ids = [c.id or f"call_{traj.next_seq()}" for c in known] if native else []
        assistant: dict[str, Any] = {"role": "assistant", "content": output.text}
        if native:
            assistant["tool_calls"] = [c.to_openai(cid) for cid, c in zip(ids, known, strict=True)]
        if known:
            run.messages.append(assistant)
            for i, call in enumerate(known):
                payload = self._tool_step(run, traj, call, round_no)
                self._step_recorded(traj)
                if native:
                    run.messages.append(
                        {"role": "tool", "tool_call_id": ids[i], "content": payload}
                    )
                else:
                    run.messages.append({"role": "user", "content": payload})
                if traj.outcome in ("fallback", "suppressed") and traj.outcome_reason:
                    return True
            if run.silent_reason is not None:
                self._end(run, traj, "silent", f"stay_silent: {run.silent_reason}")
                return True
            if blocks:
                run.messages.append(self._feedback(blocks))
            return False
        if errors:
            run.messages.append(assistant)
            run.messages.append(self._feedback(blocks))
            return False
        return self._stop_gate(run, traj, output, parsed.text, round_no)

    def _stop_gate(
        self, run: _Run, traj: Trajectory, output: PolicyOutput, reply: str, round_no: int
    ) -> bool:
        blocks: list[str] = []
        if not reply.strip():
            self._runtime_decision(
                traj, "stop", "runtime.empty-reply", "response_format", EMPTY_REPLY_MESSAGE
            )
            blocks.append(EMPTY_REPLY_MESSAGE)
        stop_hooks = self.bundle.hook_set.at("stop")
        if (
            self.reply_skill_names
            and not any(h.type == "require_reply_skill" for h in stop_hooks)
            and not set(traj.loaded_skills) & set(self.reply_skill_names)
        ):
            self._runtime_decision(
                traj,
                "stop",
                "runtime.reply-skill-gate",
                "require_reply_skill",
                REPLY_SKILL_GATE_MESSAGE,
            )
            blocks.append(REPLY_SKILL_GATE_MESSAGE)
        check = self._check(run, "stop", traj, reply=reply, grounding_text="\n".join(run.grounding))
        terminal, hook_blocks = self._hooks(run, traj, "stop", check)
        if terminal:
            self._finish_terminal(run, traj, terminal)
            return True
        blocks += hook_blocks
        if not blocks:
            self._end(run, traj, "replied", "stop gate passed", reply=reply)
            return True
        if traj.retries >= self.retry.max_retries or round_no >= self.max_rounds:
            why = (
                "retries exhausted"
                if traj.retries >= self.retry.max_retries
                else "no round left for a retry"
            )
            self._exhausted(run, traj, f"stop gate failed ({why}): {blocks[0]}")
            return True
        traj.retries += 1
        run.messages.append({"role": "assistant", "content": output.text})
        run.messages.append(self._feedback(blocks))
        return False

    def _tool_step(self, run: _Run, traj: Trajectory, call: ToolCall, round_no: int) -> str:
        """Check, run and record one tool call; returns what the model reads back."""
        spec = self.tools[call.name]
        check = self._check(run, "before_tool", traj, tool=spec, arguments=call.arguments)
        terminal, blocks = self._hooks(run, traj, "before_tool", check, target=call.name)
        record = ToolCallRecord(
            seq=traj.next_seq(),
            round=round_no,
            name=call.name,
            arguments=call.arguments,
            binding=spec.binding,
        )
        if terminal:
            record.error, record.error_kind = f"blocked: {terminal[2]}", "blocked"
            traj.tool_calls.append(record)
            self._finish_terminal(run, traj, terminal)
            return tool_payload(call.name, None, record.error)
        if blocks:
            record.error, record.error_kind = "blocked: " + " ".join(blocks), "blocked"
            traj.tool_calls.append(record)
            return tool_payload(call.name, None, record.error)
        if self._over_budget(run):
            record.error, record.error_kind = "not run: the trajectory budget is used up", "timeout"
            traj.tool_calls.append(record)
            return tool_payload(call.name, None, record.error)
        injected = run.injector.draw(call.name) if spec.role == "data" else None
        left_s = max(0.1, self.budget_s - self._elapsed(run))  # a tool must not outlive the budget
        outcome = self.runner.run(
            spec,
            call.arguments,
            run.ctx,
            injected=injected,
            timeout_s=min(self.runner.timeout_for(spec), left_s),
        )
        run.tool_s += outcome.latency_s
        record.result, record.error, record.error_kind = (
            outcome.result,
            outcome.error,
            outcome.error_kind,
        )
        record.injected, record.latency_s = outcome.injected, outcome.latency_s
        traj.tool_calls.append(record)
        if spec.role == "load_skill":
            name = skill_name_argument(call.arguments) or ""
            skill = self.bundle.skills.get(name.strip())
            traj.skill_loads.append(
                SkillLoadRecord(
                    seq=traj.next_seq(),
                    round=round_no,
                    skill=name.strip(),
                    kind=skill.kind if skill else None,
                    ok=record.ok,
                    error=record.error,
                )
            )
        elif spec.role == "silent" and record.ok:
            run.silent_reason = str((record.result or {}).get("reason", ""))
        elif record.ok:
            run.grounding.append(json.dumps(record.result, ensure_ascii=False, default=str))
        check = self._check(
            run, "after_tool", traj, tool=spec, arguments=call.arguments, tool_error=record.error
        )
        terminal, notes = self._hooks(run, traj, "after_tool", check, target=call.name)
        if terminal:
            self._finish_terminal(run, traj, terminal)
        return tool_payload(call.name, record.result, record.error, note=" ".join(notes))
