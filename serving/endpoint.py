"""Turn a serving profile into a live OpenAI-compatible endpoint the agent can call.

`open_endpoint(profile=..., log_dir=...)` is a context manager: for the
`transformers` engine it starts (and afterwards stops) the managed server; for
`sglang` and `openai` it checks the server answers and yields its address. It
also says which generation settings reach the engine, because engines differ:
`transformers serve` only samples when the request's generation config has
`do_sample=True`, so that route carries the settings as a `generation_config`
field (built on the checkpoint's own generation_config.json, so EOS ids stay).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from harness.checkpoints import checkpoint_info, resolve_checkpoint
from serving.profiles import MANAGED_ENGINES, ProfileError, ServingProfile
from serving.transformers_server import EngineServer, TransformersServer


@dataclass(frozen=True)
class GenerationSettings:
    """Sampling settings of every model call in a replay (docs/architecture.md §10: 1.0 / 0.95)."""

    temperature: float = 1.0
    top_p: float = 0.95
    max_tokens: int | None = 256
    """Cap on new tokens per model call; None leaves it to the engine."""
    seed: int | None = None

    def describe(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Endpoint:
    """A reachable OpenAI-compatible chat endpoint for one serving profile."""

    profile: ServingProfile
    base_url: str
    model: str
    api_key: str | None = field(default=None, repr=False)
    checkpoint: dict[str, Any] | None = None
    """What is served: name, path and fingerprint (``harness.checkpoints.checkpoint_info``)."""
    server_log: str | None = None
    server_pid: int | None = None
    """The managed server's process id (transformers route)."""

    @property
    def engine(self) -> str:
        return self.profile.engine

    def extra_body(self, settings: GenerationSettings) -> dict[str, Any] | None:
        """Request-body additions that make `settings` take effect on this engine."""
        if self.engine != "transformers":
            return None
        path = Path(self.checkpoint["path"]) if self.checkpoint else None
        config: dict[str, Any] = {}
        if path is not None and (path / "generation_config.json").is_file():
            config = json.loads((path / "generation_config.json").read_text(encoding="utf-8"))
        config.pop("transformers_version", None)
        config.update(
            do_sample=settings.temperature > 0,
            temperature=settings.temperature,
            top_p=settings.top_p,
        )
        if settings.max_tokens is not None:
            config["max_new_tokens"] = settings.max_tokens
        return {"generation_config": json.dumps(config, sort_keys=True)}

    def speculative_counters(self) -> dict[str, Any] | None:
        """The server's speculative-decoding figures from ``GET /get_server_info`` (SGLang's
        ``avg_spec_accept_length``; the engine server adds its cumulative counts), or None when the
        route has none (no draft head, or not an engine that reports them)."""
        if self.engine not in ("local", "sglang"):
            return None
        root = self.base_url[: -len("/v1")] if self.base_url.endswith("/v1") else self.base_url
        headers = (
            {"Authorization": f"Bearer {self.api_key}"}
            if self.api_key and self.api_key != "EMPTY"
            else {}
        )
        try:
            response = httpx.get(f"{root}/get_server_info", headers=headers, timeout=5.0)
            info = response.json() if response.status_code == 200 else None
        except (httpx.HTTPError, ValueError):
            return None
        states = (info or {}).get("internal_states") or [{}]
        state = (
            states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
        )
        if state.get("avg_spec_accept_length") is None and not state.get("speculative"):
            return None
        return {
            "avg_spec_accept_length": state.get("avg_spec_accept_length"),
            "counts": state.get("speculative"),
        }

    def describe(self) -> dict[str, Any]:
        return {
            "route": self.profile.name,
            "engine": self.engine,
            "base_url": self.base_url,
            "model": self.model,
            "checkpoint": self.checkpoint,
            "profile": self.profile.describe(),
            "server_log": self.server_log,
            "server_pid": self.server_pid,
        }


@contextlib.contextmanager
def open_endpoint(*, profile: ServingProfile, log_dir: str | Path) -> Iterator[Endpoint]:
    """Yield a live Endpoint for `profile`; a managed server lives only inside the block."""
    log_dir = Path(log_dir)
    if profile.engine in MANAGED_ENGINES:
        path = resolve_checkpoint(profile.checkpoint or "")
        common = dict(
            checkpoint=path,
            host=profile.host,
            port=profile.port,
            startup_timeout_s=profile.startup_timeout_s,
            extra_args=profile.extra_args,
            threads=profile.threads,
        )
        if profile.engine == "local":
            log_path = log_dir / "engine-server.log"
            server = EngineServer(
                log_path=log_path,
                quantization=profile.quantization,
                draft_head=profile.draft_head,
                **common,
            )
        else:
            log_path = log_dir / "transformers-serve.log"
            server = TransformersServer(
                log_path=log_path,
                continuous_batching=profile.continuous_batching,
                dtype=profile.dtype,
                **common,
            )
        with server:
            yield Endpoint(
                profile=profile,
                base_url=server.base_url,
                model=server.model,
                api_key="EMPTY",
                checkpoint=dict(
                    checkpoint_info(path, label=profile.checkpoint),
                    **({"draft_head": profile.draft_head} if profile.draft_head else {}),
                ),
                server_log=str(log_path),
                server_pid=server.pid,
            )
        return
    api_key = profile.api_key()
    assert profile.base_url is not None  # checked when the profile was built
    base_url = profile.base_url.rstrip("/")
    model = profile.model or Path(profile.checkpoint or "").name
    check_reachable(base_url=base_url, api_key=api_key, route=profile.name)
    checkpoint = None
    if profile.checkpoint:
        checkpoint = {"name": profile.checkpoint, "path": profile.checkpoint, "fingerprint": None}
        if profile.draft_head:
            checkpoint["draft_head"] = profile.draft_head
    elif profile.engine == "openai":
        checkpoint = {"name": f"vendor:{model}", "path": None, "fingerprint": None}
    yield Endpoint(
        profile=profile,
        base_url=base_url,
        model=model,
        api_key=api_key or "EMPTY",
        checkpoint=checkpoint,
    )


#: A /models answer lists model names; anything larger is not one.
MAX_MODELS_ANSWER_BYTES = 1024 * 1024


@dataclass(frozen=True)
class ModelsProbe:
    """What ``GET <base_url>/models`` of an OpenAI-compatible server answered.

    ``error``: the request did not complete (``"ConnectTimeout: ..."``); else ``status``; for a 200,
    ``problem`` says why the body is no list of models, or ``names`` are the model ids it lists.
    ``elapsed_s``: until the answer's headers (or the error)."""

    url: str
    elapsed_s: float
    error: str = ""
    status: int | None = None
    problem: str = ""
    names: list[str] = field(default_factory=list)


def probe_models(
    *, base_url: str, api_key: str | None, timeout_s: float = 10.0, started: float | None = None
) -> ModelsProbe:
    """The one reachability probe of an OpenAI-compatible endpoint (the replay's routes here, the
    studio's endpoint check): GET /models with the key, its body read up to
    ``MAX_MODELS_ANSWER_BYTES``; never raises. ``started``: a ``time.perf_counter()`` that
    ``elapsed_s`` counts from (default: now)."""
    import time

    started = time.perf_counter() if started is None else started
    url = base_url.rstrip("/") + "/models"
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.stream("GET", url, headers=headers, timeout=timeout_s) as response:
            elapsed = time.perf_counter() - started
            if response.status_code != 200:
                return ModelsProbe(url, elapsed, status=response.status_code)
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_MODELS_ANSWER_BYTES:
                    return ModelsProbe(
                        url,
                        elapsed,
                        status=200,
                        problem="the answer is larger than 1 MB; not a list of models",
                    )
    except (httpx.HTTPError, httpx.InvalidURL) as error:
        return ModelsProbe(
            url, time.perf_counter() - started, error=f"{type(error).__name__}: {error}"
        )
    try:
        answer = json.loads(body)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than the parser goes
        return ModelsProbe(url, elapsed, status=200, problem="the answer is not JSON")
    listed = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(listed, list):
        return ModelsProbe(
            url, elapsed, status=200, problem='the answer has no "data" list of models'
        )
    names = [item.get("id") for item in listed if isinstance(item, dict)]
    return ModelsProbe(url, elapsed, status=200, names=names)


def check_reachable(*, base_url: str, api_key: str | None, route: str) -> None:
    """Raise ProfileError unless GET {base_url}/models answers (a 401/403 means a bad key)."""
    probe = probe_models(base_url=base_url, api_key=api_key)
    if probe.error:
        raise ProfileError(
            f"route {route}: {base_url}/models did not answer ({probe.error}); "
            "is the server running (see docs/serving.md for the SGLang launch command)?"
        )
    if probe.status in (401, 403):
        raise ProfileError(f"route {route}: {base_url} refused the API key (HTTP {probe.status})")
    if probe.status >= 400:
        raise ProfileError(f"route {route}: GET {base_url}/models answered HTTP {probe.status}")
