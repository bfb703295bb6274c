"""make_policy: build a policy from a one-string spec (CLI flags, job settings).

``local`` (default model), ``tiny`` (2-layer random model), ``local:PATH``
(any checkpoint folder), ``openai:BASE_URL:MODEL`` (the model name is what
follows the last colon, so base URLs with ports work) and ``scripted:FILE``.

A local model runs on llama.cpp (``serving.llama_cpp``, the CPU route:
faster than the torch engine at the agent's context length, measured in
``benchmarks/local_engine.py``); ``$HARNESS_LOCAL_ENGINE=torch`` or a
``torch:`` spec (``torch:local``, ``torch:tiny``, ``torch:PATH``) runs it on the
project's torch engine instead (``serving.engine``: fp32 reference, int8, MTP
draft heads), and ``llama:`` names the llama.cpp route explicitly.

Every model call goes through this module: the agent's policy (``make_policy``) and the other roles'
models (``role_model``: the judge, the diagnoser, the paraphraser, IFEval), each with its role's
timeout, retries and usage record (``harness.policies.roles``). An OpenAI-compatible spec sends
``api_key`` when the caller gives one (a studio endpoint's secret, or ``KEYLESS``), else
``$OPENAI_API_KEY``: the CLIs' spec, where the person running the command owns the environment.

The Harness library holds no inference engine. A local route is a plug-in: an
entry point of the group ``harness.local_routes`` names a ``Policy`` class
that takes ``(checkpoint, *, name=, settings=)``; this project's two routes
are declared in ``pyproject.toml`` and live in ``serving``.
"""

from __future__ import annotations

import functools
import os
import re
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from harness.policies.base import GenerationSettings, Policy
from harness.policies.roles import RoleModel, role_settings

SPEC_HELP = (
    "local | tiny | local:CHECKPOINT_DIR | torch:local|tiny|DIR | llama:local|tiny|DIR "
    "| openai:BASE_URL:MODEL | scripted:FILE"
)
LOCAL_ENGINE_ENV = "HARNESS_LOCAL_ENGINE"
#: Entry points of this group are the local routes, by name (this project: llama, torch).
ROUTES_GROUP = "harness.local_routes"
DEFAULT_LOCAL_ENGINE = "llama"


@functools.cache
def _routes() -> dict[str, EntryPoint]:
    return {point.name: point for point in entry_points(group=ROUTES_GROUP)}


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    """``$name`` (blank: ``default``); a value not in ``choices`` is a ``ValueError`` naming the
    variable and the choices. The one reader of the local routes' settings (route, weights
    format)."""
    value = os.environ.get(name, "").strip() or default
    if value not in choices:
        raise ValueError(f"${name}: {value!r} is not one of {', '.join(choices)}")
    return value


def local_engines() -> tuple[str, ...]:
    """The names of the installed local routes."""
    return tuple(sorted(_routes()))


def local_engine() -> str:
    """The route ``local`` specs run on: ``$HARNESS_LOCAL_ENGINE`` (llama, the default, or
    torch)."""
    return env_choice(LOCAL_ENGINE_ENV, local_engines(), DEFAULT_LOCAL_ENGINE)


def local_route(engine: str) -> type[Policy]:
    """The policy class of an installed local route; ``ValueError`` names the installed ones."""
    point = _routes().get(engine)
    if point is None:
        raise ValueError(
            f"local route {engine!r} is not installed (installed: "
            f"{', '.join(local_engines()) or 'none'}); "
            f"routes are entry points of the group {ROUTES_GROUP!r}: run 'pip install -e .' "
            "(scripts/bootstrap.sh does) in this project"
        )
    return point.load()


def make_local_policy(
    target: str,
    *,
    engine: str | None = None,
    name: str | None = None,
    settings: GenerationSettings | None = None,
) -> Policy:
    """A local checkpoint (``local``, ``tiny`` or a folder) on llama.cpp or the torch engine."""
    from harness.checkpoints import resolve_checkpoint

    route = local_route(engine or local_engine())
    return route(resolve_checkpoint(target), name=name, settings=settings)


def policy_model(spec: str) -> dict[str, str]:
    """What a trajectory posted to the studio says of its model: the spec, and for a local
    checkpoint the fingerprint of its files (``harness.checkpoints.fingerprint``)."""
    from harness.checkpoints import fingerprint, resolve_checkpoint

    spec = spec.strip()
    target = None
    if spec in ("local", "tiny") or spec.startswith("local:"):
        target = spec.split(":", 1)[1] if spec.startswith("local:") else spec
    for engine in local_engines():
        if spec.startswith(f"{engine}:"):
            target = spec.split(":", 1)[1]
    if target is None:
        return {"name": spec}
    return {"name": spec, "fingerprint": fingerprint(resolve_checkpoint(target))}


def make_policy(
    spec: str,
    *,
    settings: GenerationSettings | None = None,
    role: str = "agent",
    api_key: str | None = None,
    name: str | None = None,
    extra_body: dict[str, Any] | None = None,
) -> Policy:
    """Build the policy a spec names; ``ValueError`` says what valid specs look like. An
    OpenAI-compatible one calls with ``role``'s timeout, retries and request fields
    (``harness.policies.roles``), plus ``extra_body`` (an engine's own fields, e.g. the replay's
    sampling for ``transformers serve``), and sends ``api_key``, or ``$OPENAI_API_KEY`` when it is
    None. ``name`` is how trajectories name the policy (default: the spec)."""
    spec = spec.strip()
    calls = role_settings(role)
    if spec in ("local", "tiny") or spec.startswith("local:"):
        target = spec.split(":", 1)[1] if spec.startswith("local:") else spec
        return make_local_policy(target, name=name or spec, settings=settings)
    for engine in local_engines():
        if spec.startswith(f"{engine}:"):
            return make_local_policy(
                spec.split(":", 1)[1], engine=engine, name=name or spec, settings=settings
            )
    if spec.startswith("openai:"):
        base_url, model = _openai_target(spec)
        from harness.policies.openai_chat import OpenAIChatPolicy

        return OpenAIChatPolicy(
            base_url=base_url,
            model=model,
            settings=settings,
            api_key=os.environ.get("OPENAI_API_KEY") if api_key is None else api_key,
            timeout_s=calls.timeout_s,
            retries=calls.retries,
            extra_body={**calls.extra_body(), **(extra_body or {})},
            name=name,
        )
    if spec.startswith("scripted:"):
        from harness.policies.scripted import ScriptedPolicy

        return ScriptedPolicy.load(spec[len("scripted:") :])
    raise ValueError(f"unknown policy {spec!r}; valid: {SPEC_HELP}")


#: ``BASE_URL:MODEL``: the base URL is a scheme, a host with its port and a path without colons (the
#: port and path taken whole); the model is the rest, colons included (``qwen2.5:0.5b``).
_OPENAI_TARGET = re.compile(
    r"^(?P<base>https?://(?:\[[^\]\s]+\]|[^/:\[\]\s]+)(?>(?::\d+)?)(?>(?:/[^:\s]*)?)):(?P<model>\S+)$"
)


def _openai_target(spec: str) -> tuple[str, str]:
    """(base URL, model) of an ``openai:BASE_URL:MODEL`` spec; the model is what follows the base
    URL (its scheme, host, port and path)."""
    match = _OPENAI_TARGET.match(spec[len("openai:") :])
    if match is None:
        raise ValueError(
            f"bad policy {spec!r}: expected openai:BASE_URL:MODEL, "
            "e.g. openai:http://127.0.0.1:8000/v1:my-model"
        )
    return match["base"], match["model"]


def call_spec(text: str) -> str:
    """A role's model as its CLI flag names it: ``BASE_URL:MODEL`` (an OpenAI-compatible server, the
    judge's and paraphraser's first form) is ``openai:BASE_URL:MODEL``; anything else is a policy
    spec."""
    text = text.strip()
    return f"openai:{text}" if text.startswith(("http://", "https://")) else text


def role_model(role: str, spec: str, *, api_key: str | None = None) -> RoleModel:
    """The model a role (judge, diagnoser, paraphraser, ifeval) calls: the policy ``spec`` names,
    built as ``make_policy`` builds the agent's, with the role's settings and usage record
    (``RoleModel``)."""
    spec = call_spec(spec)
    calls = role_settings(role)
    policy = make_policy(
        spec,
        role=role,
        api_key=api_key,
        settings=GenerationSettings(temperature=0.0, max_new_tokens=calls.max_new_tokens),
    )
    return RoleModel(role=role, policy=policy, label=spec_label(spec))


def spec_label(spec: str) -> str:
    """How verdicts and proposals name a role's model (``llm:<label>``): an OpenAI-compatible spec's
    model name, else the spec."""
    spec = call_spec(spec)
    return _openai_target(spec)[1] if spec.startswith("openai:") else spec
