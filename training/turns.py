"""Per-turn training examples from a recorded trajectory, with hook-retry stripping.

Each model call of a trajectory becomes one example: the exact messages the
runtime sent (its own prompt assembly, so training and serving see the same
text) as the prompt, the model's text as the completion. A call whose output a
hook blocked (a *failed attempt*) is never a completion.

Hook-retry stripping: when a round's output was blocked and the runtime
retried, the failed output and the hook feedback that followed it are message
segments of every later call's context. ``strip_retries=True`` cuts those
segments out, so the later turns read as if the model had got it right first
time; ``strip_retries=False`` keeps the whole retry so the model learns to
recover from hook feedback. The runtime appends messages between calls (the
system prompt may be re-rendered, e.g. with the loaded skills), so segments are
located by message index: the messages call k+1 added after call k's.
"""

from __future__ import annotations

from typing import Any

BLOCKING = ("block",)
# Events at which a block means "the model's output for this round was rejected".
OUTPUT_EVENTS = ("after_model", "after_model_call", "stop", "on_stop", "before_reply")


def _round_of(call: dict[str, Any], index: int) -> int:
    return int(call.get("round", index + 1))


def failed_calls(trajectory: dict[str, Any]) -> list[int]:
    """Indices of model calls whose output a hook blocked and the runtime retried.

    A call counts as failed when a blocking hook decision in its round judged the
    output itself (stop gate or after-model hooks) and no tool of that round ran,
    so dropping it loses no tool result that later turns rely on; a malformed
    tool-call text that the runtime fed back also counts.
    """
    calls = trajectory.get("model_calls", [])
    rounds_with_tools = {
        int(t.get("round", 0))
        for t in trajectory.get("tool_calls", [])
        if t.get("error_kind") not in ("blocked",)
    }
    blocked_rounds = {
        int(h.get("round", 0))
        for h in trajectory.get("hook_decisions", [])
        if h.get("decision") in BLOCKING and h.get("event") in OUTPUT_EVENTS
    }
    failed = []
    for index, call in enumerate(calls[:-1]):  # the last call has no retry after it
        rnd = _round_of(call, index)
        if rnd in blocked_rounds and rnd not in rounds_with_tools:
            failed.append(index)
    return failed


def has_retry(trajectory: dict[str, Any]) -> bool:
    return bool(failed_calls(trajectory))


def _segments(calls: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Message index range [start, end) that call k+1's context added after call k."""
    spans = []
    for k in range(len(calls) - 1):
        start = len(calls[k]["messages"])
        end = len(calls[k + 1]["messages"])
        spans.append((start, max(start, end)))
    return spans


def turn_examples(
    trajectory: dict[str, Any], *, strip_retries: bool, meta: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One prompt/completion example per accepted model call of ``trajectory``.

    Completions are the raw model text (tool calls in the text protocol included);
    calls that errored or produced nothing are skipped, failed attempts are never
    completions, and with ``strip_retries`` their segments leave later contexts.
    """
    calls = trajectory.get("model_calls", [])
    failed = set(failed_calls(trajectory))
    spans = _segments(calls)
    examples = []
    for index, call in enumerate(calls):
        if index in failed or call.get("error") or not str(call.get("text", "")).strip():
            continue
        messages = [
            dict(role=m["role"], content=str(m.get("content") or "")) for m in call["messages"]
        ]
        if strip_retries:
            cut: set[int] = set()
            for k in failed:
                if k < index:
                    cut.update(range(*spans[k]))
            messages = [m for i, m in enumerate(messages) if i not in cut]
        examples.append(
            {
                "prompt": messages,
                "completion": [{"role": "assistant", "content": str(call["text"])}],
                "meta": {
                    **(meta or {}),
                    "request_id": trajectory.get("request_id", ""),
                    "turn": index,
                    "retry_kept": bool(failed) and not strip_retries,
                    "retry_stripped": bool(failed) and strip_retries,
                },
            }
        )
    return examples
