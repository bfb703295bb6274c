"""Serving profiles: one configuration naming a checkpoint and the engine that serves it.

A profile is one of four routes:

- `local`: the CPU route behind its OpenAI-compatible server (`python -m serving
  engine-server`), started and stopped by serving/: llama.cpp on a GGUF file
  (`quantization: gguf`, the default, or a GGUF format such as `Q8_0`), or the
  project's torch engine (`none`: fp32, `int8`, or with a draft head); the
  route the runtime's local policy runs in process;
- `transformers`: `transformers serve` on this machine's CPU, started and
  stopped by serving/ (see transformers_server.py), kept for comparison;
- `sglang`: an SGLang server on a GPU host, launched with the command from
  sglang.py and reached at `base_url`;
- `openai`: any vendor API speaking OpenAI chat completions: base URL, model,
  and the API key read from an environment variable (never stored).

Profiles live in a YAML file (`profiles:` mapping name -> fields); the built-in file
serving/profiles.yaml ships `cpu-engine` (llama.cpp), `cpu-engine-fp32`, `cpu-engine-int8`,
`cpu-engine-tiny`, `cpu-engine-tiny-torch`, `cpu-local`, `cpu-tiny` and `gpu-sglang`. A route given
on the command line is a profile name, or one of the inline forms `local:CHECKPOINT`,
`transformers:CHECKPOINT`, `sglang:BASE_URL:MODEL`, `openai:BASE_URL:MODEL[:KEY_ENV]`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from harness.userfiles import read_text
from harness.yamlio import load_yaml

ENGINES = ("local", "transformers", "sglang", "openai")
MANAGED_ENGINES = ("local", "transformers")  # started and stopped here, on this CPU
BUILTIN_PROFILES = Path(__file__).with_name("profiles.yaml")
_INLINE_URL = re.compile(r"^(https?://[^/\s]+/[^:\s]*):([^:\s]+)(?::([A-Za-z_][A-Za-z0-9_]*))?$")


class ProfileError(ValueError):
    """A serving profile or route the user wrote that cannot be used."""


@dataclass(frozen=True)
class ServingProfile:
    """A checkpoint and the engine/route that serves it."""

    name: str
    engine: str
    """'local' (this project's engine, CPU, managed here), 'transformers' (CPU, managed here),
    'sglang' (GPU host) or 'openai' (vendor API)."""
    checkpoint: str | None = None
    """'default' (SmolLM2-135M from the model cache), 'tiny', or a checkpoint folder."""
    draft_head: str | None = None
    """sglang: the adapted MTP draft-head folder on the GPU host; local: the engine decodes
    speculatively with this head (a folder here)."""
    base_url: str | None = None
    """sglang/openai: the OpenAI-compatible base URL, e.g. http://127.0.0.1:30000/v1."""
    model: str | None = None
    """Model name sent in requests; defaults to the checkpoint's name (sglang) or path."""
    api_key_env: str | None = None
    """Environment variable holding the API key (openai: required; sglang: optional)."""
    host: str = "127.0.0.1"
    port: int | None = None
    """transformers: port to bind; None picks a free one."""
    continuous_batching: bool = False
    """transformers: serve with --continuous-batching (paged attention)."""
    dtype: str = "auto"
    quantization: str = "none"
    """local: 'gguf' (llama.cpp, the default for engine local) or a GGUF format (Q8_0, Q4_1, ...);
    'none' (the torch engine, fp32) or 'int8' (the torch engine's int8 weights)."""
    threads: int | None = None
    """local/transformers: CPU threads of the server (OMP/MKL/torch); None lets torch decide.
    On a small shared box 1 avoids OpenMP oversubscription, which can slow decoding ~10x."""
    startup_timeout_s: float = 300.0
    extra_args: tuple[str, ...] = field(default_factory=tuple)
    source: str = "<inline>"
    """Where the profile was defined (file name or '<inline>'), for error messages."""

    def api_key(self) -> str | None:
        """The API key from the environment; raises if an openai route lacks it."""
        if not self.api_key_env:
            return None
        value = os.environ.get(self.api_key_env)
        if not value and self.engine == "openai":
            raise ProfileError(
                f"{self.source}: profile {self.name!r}: environment variable {self.api_key_env} "
                "is not set; export it with the vendor API key"
            )
        return value or None

    def describe(self) -> dict[str, Any]:
        """The profile as recorded in a run (no secrets: the key's variable name only)."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


_FIELD_TYPES = {
    "engine": str,
    "checkpoint": str,
    "draft_head": str,
    "base_url": str,
    "model": str,
    "api_key_env": str,
    "host": str,
    "port": int,
    "continuous_batching": bool,
    "dtype": str,
    "quantization": str,
    "threads": int,
    "startup_timeout_s": (int, float),
    "extra_args": list,
}


def profile_from_mapping(name: str, data: Any, *, source: str) -> ServingProfile:
    """Build and check one profile; errors name the file, profile and field."""
    where = f"{source}: profiles.{name}"
    if not isinstance(data, dict):
        raise ProfileError(f"{where}: expected a mapping of fields, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_FIELD_TYPES))
    if unknown:
        raise ProfileError(f"{where}: unknown field(s) {unknown}; valid: {sorted(_FIELD_TYPES)}")
    for key, value in data.items():
        expected = _FIELD_TYPES[key]
        if (
            value is not None
            and not isinstance(value, expected)
            or (expected is int and isinstance(value, bool))
        ):
            raise ProfileError(f"{where}.{key}: {value!r} has the wrong type")
    engine = data.get("engine")
    if engine not in ENGINES:
        raise ProfileError(f"{where}.engine: {engine!r} is not one of {', '.join(ENGINES)}")
    kwargs = dict(data)
    if engine == "local" and kwargs.get("quantization") is None:
        kwargs["quantization"] = "gguf"  # the CPU route: llama.cpp (docs/serving.md)
    kwargs["extra_args"] = tuple(str(a) for a in data.get("extra_args") or ())
    profile = ServingProfile(name=name, source=source, **kwargs)
    _check_profile(profile, where)
    return profile


def _check_profile(p: ServingProfile, where: str) -> None:
    if p.engine in MANAGED_ENGINES:
        if not p.checkpoint:
            raise ProfileError(
                f"{where}.checkpoint: required for engine "
                f"{p.engine} ('default', 'tiny' or a folder)"
            )
        if p.base_url:
            raise ProfileError(
                f"{where}.base_url: not used by engine {p.engine} (it picks its own port)"
            )
    else:
        if not p.base_url:
            raise ProfileError(
                f"{where}.base_url: required for engine {p.engine}, e.g. http://127.0.0.1:30000/v1"
            )
        if not p.base_url.startswith(("http://", "https://")):
            raise ProfileError(
                f"{where}.base_url: {p.base_url!r} must start with http:// or https://"
            )
    if p.engine == "openai":
        if not p.model:
            raise ProfileError(
                f"{where}.model: required for engine openai (the vendor's model name)"
            )
        if not p.api_key_env:
            raise ProfileError(
                f"{where}.api_key_env: required for engine "
                "openai (name of the env var with the key)"
            )
    if p.engine == "sglang" and not (p.model or p.checkpoint):
        raise ProfileError(
            f"{where}: engine sglang needs model or checkpoint (the served model name)"
        )
    if p.draft_head and p.engine not in ("sglang", "local"):
        raise ProfileError(f"{where}.draft_head: only engines sglang and local serve a draft head")
    if p.threads is not None and p.threads < 1:
        raise ProfileError(f"{where}.threads: {p.threads} must be >= 1")
    if p.threads is not None and p.engine not in MANAGED_ENGINES:
        raise ProfileError(
            f"{where}.threads: only engines local and transformers run here with a thread count"
        )
    from serving.engine_server import QUANTIZATIONS

    if p.quantization not in QUANTIZATIONS:
        raise ProfileError(
            f"{where}.quantization: {p.quantization!r} is not one of {', '.join(QUANTIZATIONS)}"
        )
    if p.quantization != "none" and p.engine != "local":
        raise ProfileError(f"{where}.quantization: only engine local quantizes its weights")
    if p.continuous_batching and p.engine != "transformers":
        raise ProfileError(
            f"{where}.continuous_batching: only engine transformers has this switch "
            "(engine local always batches concurrent requests)"
        )
    if p.port is not None and not 1 <= p.port <= 65535:
        raise ProfileError(f"{where}.port: {p.port} is outside 1..65535")


def load_profiles(path: str | Path | None = None) -> dict[str, ServingProfile]:
    """Profiles from a YAML file (default: the built-in serving/profiles.yaml)."""
    path = Path(path) if path is not None else BUILTIN_PROFILES
    text = read_text(path, what="profiles file", error=ProfileError)
    data, _, problems = load_yaml(text, file=str(path))  # no aliases, bounded (harness/yamlio.py)
    if problems:
        raise ProfileError("; ".join(str(p) for p in problems))
    if not isinstance(data, dict) or not isinstance(data.get("profiles"), dict):
        raise ProfileError(f"{path}: expected a top-level 'profiles:' mapping of name -> fields")
    return {
        str(name): profile_from_mapping(str(name), body, source=str(path))
        for name, body in data["profiles"].items()
    }


def resolve_route(route: str, *, profiles_path: str | Path | None = None) -> ServingProfile:
    """A profile from a route string: a profile name or an inline engine:... form."""
    engine, sep, rest = route.partition(":")
    if sep and engine in ENGINES and rest:
        return _inline_profile(route, engine, rest)
    profiles = load_profiles(profiles_path)
    if route not in profiles:
        source = profiles_path or BUILTIN_PROFILES
        raise ProfileError(
            f"route {route!r}: not a profile in {source} (known: {', '.join(sorted(profiles))}) "
            "and not an inline route (local:CHECKPOINT, "
            "transformers:CHECKPOINT, sglang:BASE_URL:MODEL, "
            "openai:BASE_URL:MODEL[:KEY_ENV])"
        )
    return profiles[route]


def _inline_profile(route: str, engine: str, rest: str) -> ServingProfile:
    if engine in MANAGED_ENGINES:
        return profile_from_mapping(
            route, {"engine": engine, "checkpoint": rest}, source="<inline>"
        )
    # BASE_URL has ':' in it (scheme, port), so it must carry a path (/v1) to end unambiguously.
    match = _INLINE_URL.match(rest)
    if match is None or (engine != "openai" and match.group(3)):
        raise ProfileError(
            f"route {route!r}: expected {engine}:BASE_URL:MODEL"
            + ("[:KEY_ENV]" if engine == "openai" else "")
            + f" with a path in BASE_URL, e.g. {engine}:http://127.0.0.1:30000/v1:my-model"
        )
    head, model, key_env = match.groups()
    data: dict[str, Any] = {"engine": engine, "base_url": head, "model": model}
    if engine == "openai":
        data["api_key_env"] = key_env or "OPENAI_API_KEY"
    return profile_from_mapping(route, data, source="<inline>")
