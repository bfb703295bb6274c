"""The CPU serving route: a local model behind an OpenAI-compatible HTTP endpoint.

``python -m serving engine-server CHECKPOINT [--port N] [--quantization gguf|Q8_0|...|none|int8]
[--draft-head DIR]`` serves ``POST /v1/chat/completions`` (streamed or not), ``GET /v1/models``,
``GET /health`` and ``GET /get_server_info`` (counters, with the speculative decoding figures under
SGLang's name ``avg_spec_accept_length``, so the replay reads both routes the same way).

Two engines answer, chosen by ``--quantization``:

- ``gguf`` (the default) or a GGUF format (``Q8_0``, ``Q4_1``, ...): llama.cpp in process
  (``serving.llama_cpp``): slots decoded together, each slot's prompt cache, the prompt
  sent as the token ids the runtime's local policy renders;
- ``none`` (fp32) or ``int8``, and any ``--draft-head``: the project's torch engine
  (``serving.engine``), for the fp32 reference, int8 weights and speculative decoding with our head.

A call may name the agent request it belongs to (``X-Harness-Request``) and, on a request's
first call, the request before it in the client's thread (``X-Harness-Request-Ended``); the
agent's client sends both (``OpenAIChatPolicy``). On llama.cpp they do what ``begin_request``
does in process: a request's slot is held for its next call, and a request that is over holds
nothing, so the next request may reuse that slot's Harness prefix at once. Without them a slot
is held for ``HOLD_S`` after each call. ``get_server_info`` counts the open and ended requests.

The replay's ``cpu-engine`` profiles start it as a managed process
(``serving.transformers_server.EngineServer``), so the deployment replay on CPU measures the
complete agent on the same engine the runtime uses in process.

Bounds (docs/security.md): a body is refused by its ``Content-Length`` before it is read, and while
it is read, past ``MAX_BODY_BYTES`` (413); a body not received within ``READ_TIMEOUT_S`` is a 408; a
prompt longer than the context is a 400 before any prefill (a cheap bound on characters first, then
the token count); uvicorn answers 503 past ``--max-connections``; a client that goes away cancels
its request, during prefill as well as decode. A connection whose request headers are not complete
within ``HEADER_TIMEOUT_S`` is answered 408 and closed, and one client address holds at most
``MAX_CONNECTIONS_PER_CLIENT`` connections (more get a 503 at once): 64 sockets that sent only a
request line and a ``Host`` header once held every slot, and every other client got 503 for 30 s or
more (``GuardedH11Protocol``).

The package, by concern: ``parsing`` (a request's body and headers, checked by name), ``backends``
(llama.cpp and the torch engine behind one interface), ``app`` (the HTTP routes and a completion's
run, whole or streamed), ``protocol`` (the connection bounds) and ``cli`` (the flags and the uvicorn
server of ``python -m serving engine-server``). The names below are its public ones.
"""

from __future__ import annotations

from serving.engine_server.app import EngineApp, TextStream, build_app
from serving.engine_server.backends import (
    GGUF_CHOICES,
    KNOWN_REQUESTS,
    QUANTIZATIONS,
    TORCH_QUANTIZATIONS,
    Backend,
    Result,
    make_backend,
)
from serving.engine_server.cli import add_arguments, main, run
from serving.engine_server.parsing import (
    MAX_BODY_BYTES,
    MAX_SEED,
    READ_TIMEOUT_S,
    BadRequest,
    parse_body,
    read_body,
    request_id,
)
from serving.engine_server.protocol import (
    HEADER_TIMEOUT_S,
    MAX_CONNECTIONS,
    MAX_CONNECTIONS_PER_CLIENT,
    guarded_protocol,
)

__all__ = [
    "GGUF_CHOICES",
    "HEADER_TIMEOUT_S",
    "KNOWN_REQUESTS",
    "MAX_BODY_BYTES",
    "MAX_CONNECTIONS",
    "MAX_CONNECTIONS_PER_CLIENT",
    "MAX_SEED",
    "QUANTIZATIONS",
    "READ_TIMEOUT_S",
    "TORCH_QUANTIZATIONS",
    "BadRequest",
    "Backend",
    "EngineApp",
    "Result",
    "TextStream",
    "add_arguments",
    "build_app",
    "guarded_protocol",
    "main",
    "make_backend",
    "parse_body",
    "read_body",
    "request_id",
    "run",
]
