"""Imported at start-up by a test's subprocess that has this folder on PYTHONPATH: llama.cpp ends a
stopped call only ``$SLOW_LLAMA_STOP_S`` seconds after it was told to stop, computing on meanwhile,
as on a loaded machine where its next prefill batch takes that long. A call cut at its budget then
stays inside llama.cpp while the process exits, which aborts it unless the process stops and joins
its calls first. So that the tiny model has that much work left, each call may fill its slot's
context (4096 tokens, beyond the 2048 the tiny model declares). ``$SLOW_LLAMA_FIRST_EVENT_S`` holds
a call's first event that long, as a slow prefill does: a budget shorter than it is then used up
during round 1 on any machine (the tiny model alone may finish a round before a 3 s budget on a fast
one)."""

import os
import time

import serving.llama_cpp as llama

STOP_S = float(os.environ.get("SLOW_LLAMA_STOP_S", "2"))
FIRST_EVENT_S = float(os.environ.get("SLOW_LLAMA_FIRST_EVENT_S", "0"))


class _LateStop:
    def __init__(self, server) -> None:
        self.server = server

    def handle_completions(self, body, on_event):
        told = []
        held = []

        def late(event):
            if not held:
                held.append(time.sleep(FIRST_EVENT_S))
            if on_event(event) and not told:
                told.append(time.monotonic())
            return bool(told) and time.monotonic() - told[0] >= STOP_S

        return self.server.handle_completions(
            {**body, "max_tokens": llama.DEFAULT_SLOT_CONTEXT}, late
        )


_init = llama.LlamaServer.__init__


def _late_init(self, *args, **kwargs) -> None:
    _init(self, *args, **kwargs)
    self._server = _LateStop(self._server)


llama.LlamaServer.__init__ = _late_init
llama.trained_context = lambda gguf: None
