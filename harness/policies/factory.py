"""make_policy: build a policy from a one-string spec (CLI flags, job settings).

``local`` (default model), ``tiny`` (2-layer random model), ``local:PATH``
(any checkpoint folder), ``openai:BASE_URL:MODEL`` (the model name is what
follows the last colon, so base URLs with ports work) and ``scripted:FILE``.

A local model runs on llama.cpp (``harness.policies.llama_cpp``, the CPU route:
faster than the torch engine at the agent's context length, measured in
``benchmarks/local_engine.py``); ``$HARNESS_LOCAL_ENGINE=torch`` or a
``torch:`` spec (``torch:local``, ``torch:tiny``, ``torch:PATH``) runs it on the
project's torch engine instead (``harness.engine``: fp32 reference, int8, MTP
draft heads), and ``llama:`` names the llama.cpp route explicitly.
"""

from __future__ import annotations

import os

from harness.policies.base import GenerationSettings, Policy

SPEC_HELP = ("local | tiny | local:CHECKPOINT_DIR | torch:local|tiny|DIR | llama:local|tiny|DIR "
             "| openai:BASE_URL:MODEL | scripted:FILE")
LOCAL_ENGINE_ENV = "HARNESS_LOCAL_ENGINE"
LOCAL_ENGINES = ("llama", "torch")


def local_engine() -> str:
    """The route ``local`` specs run on: ``$HARNESS_LOCAL_ENGINE`` (llama, the default, or torch)."""
    value = os.environ.get(LOCAL_ENGINE_ENV, "").strip() or "llama"
    if value not in LOCAL_ENGINES:
        raise ValueError(f"${LOCAL_ENGINE_ENV}: {value!r} is not one of {', '.join(LOCAL_ENGINES)}")
    return value


def make_local_policy(target: str, *, engine: str | None = None, name: str | None = None,
                      settings: GenerationSettings | None = None) -> Policy:
    """A local checkpoint (``local``, ``tiny`` or a folder) on llama.cpp or the torch engine."""
    from harness.checkpoints import resolve_checkpoint

    checkpoint = resolve_checkpoint(target)
    if (engine or local_engine()) == "torch":
        from harness.policies.local import TransformersPolicy

        return TransformersPolicy(checkpoint, name=name, settings=settings)
    from harness.policies.llama_cpp import LlamaCppPolicy

    return LlamaCppPolicy(checkpoint, name=name, settings=settings)


def make_policy(spec: str, *, settings: GenerationSettings | None = None) -> Policy:
    """Build the policy a spec names; ``ValueError`` says what valid specs look like."""
    spec = spec.strip()
    if spec in ("local", "tiny") or spec.startswith("local:"):
        target = spec.split(":", 1)[1] if spec.startswith("local:") else spec
        return make_local_policy(target, name=spec, settings=settings)
    for engine in LOCAL_ENGINES:
        if spec.startswith(f"{engine}:"):
            return make_local_policy(spec.split(":", 1)[1], engine=engine, name=spec, settings=settings)
    if spec.startswith("openai:"):
        rest = spec[len("openai:"):]
        base_url, sep, model = rest.rpartition(":")
        if not sep or not base_url.startswith(("http://", "https://")) or not model:
            raise ValueError(f"bad policy {spec!r}: expected openai:BASE_URL:MODEL, "
                             "e.g. openai:http://127.0.0.1:8000/v1:my-model")
        from harness.policies.openai_chat import OpenAIChatPolicy

        return OpenAIChatPolicy(base_url=base_url, model=model, settings=settings)
    if spec.startswith("scripted:"):
        from harness.policies.scripted import ScriptedPolicy

        return ScriptedPolicy.load(spec[len("scripted:"):])
    raise ValueError(f"unknown policy {spec!r}; valid: {SPEC_HELP}")
