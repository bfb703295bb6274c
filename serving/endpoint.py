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


def check_reachable(*, base_url: str, api_key: str | None, route: str) -> None:
    """Raise ProfileError unless GET {base_url}/models answers (a 401/403 means a bad key)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        response = httpx.get(f"{base_url}/models", headers=headers, timeout=10.0)
    except httpx.HTTPError as exc:
        raise ProfileError(
            f"route {route}: {base_url}/models did not answer ({type(exc).__name__}: {exc}); "
            "is the server running (see docs/serving.md for the SGLang launch command)?"
        ) from None
    if response.status_code in (401, 403):
        raise ProfileError(
            f"route {route}: {base_url} refused the API key (HTTP {response.status_code})"
        )
    if response.status_code >= 400:
        raise ProfileError(
            f"route {route}: GET {base_url}/models answered HTTP {response.status_code}"
        )
