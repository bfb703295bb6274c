"""make_policy: build a policy from a one-string spec (CLI flags, job settings).

``local`` (default model), ``tiny`` (2-layer random model), ``local:PATH``
(any checkpoint folder), ``openai:BASE_URL:MODEL`` (the model name is what
follows the last colon, so base URLs with ports work) and ``scripted:FILE``.
"""

from __future__ import annotations

from harness.policies.base import GenerationSettings, Policy

SPEC_HELP = "local | tiny | local:CHECKPOINT_DIR | openai:BASE_URL:MODEL | scripted:FILE"


def make_policy(spec: str, *, settings: GenerationSettings | None = None) -> Policy:
    """Build the policy a spec names; ``ValueError`` says what valid specs look like."""
    spec = spec.strip()
    if spec in ("local", "tiny") or spec.startswith("local:"):
        from harness.checkpoints import resolve_checkpoint
        from harness.policies.local import TransformersPolicy

        target = spec.split(":", 1)[1] if spec.startswith("local:") else spec
        return TransformersPolicy(resolve_checkpoint(target), name=spec, settings=settings)
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
