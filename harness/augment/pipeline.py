"""Composing the five families into one validated variant of a Harness.

``augment_bundle(bundle=..., seed=..., dims=...)`` applies the requested
families in a fixed order (tools, skills, skill-content, prompt, hooks:
renames first, so later paraphrases keep the new names), renders the files,
validates them with the Harness format's own loader and returns a
:class:`Variant`: the new bundle plus the :class:`HarnessMapping` that remaps
gold labels and trajectories. The per-family functions
(``transform_skill_identifiers`` ...) are the same steps one at a time; their
variants compose with ``Variant.then`` and the mappings with
``HarnessMapping.then``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from harness.augment.context import AugmentContext
from harness.augment.editable import Draft
from harness.augment.envelope import Envelope, load_envelope
from harness.augment.hook_variants import apply_hooks
from harness.augment.mapping import HarnessMapping
from harness.augment.paraphrase import Rewriter
from harness.augment.prompt_blocks import apply_prompt
from harness.augment.requirements import Requirements
from harness.augment.skill_content import apply_skill_content
from harness.augment.skill_ids import apply_skill_identifiers
from harness.augment.tool_defs import apply_tools
from harness.bundle import Bundle, load_mapping
from harness.diff import summarise

DIMS = ("skills", "skill-content", "tools", "prompt", "hooks")
_ORDER = ("tools", "skills", "skill-content", "prompt", "hooks")
_APPLY = {
    "tools": apply_tools,
    "skills": apply_skill_identifiers,
    "skill-content": apply_skill_content,
    "prompt": apply_prompt,
    "hooks": apply_hooks,
}

_DEFAULT_ENVELOPE: Envelope | None = None


def default_envelope() -> Envelope:
    global _DEFAULT_ENVELOPE
    if _DEFAULT_ENVELOPE is None:
        _DEFAULT_ENVELOPE = load_envelope()
    return _DEFAULT_ENVELOPE


def opaque_names_envelope(share: float) -> Envelope:
    """The shipped envelope with ``opaque_name_share`` set to ``share`` for tool and skill
    renames (a name that carries no meaning must be read from the list the model is shown)."""
    env = default_envelope()
    return replace(
        env,
        tools={**env.tools, "opaque_name_share": share},
        skills={**env.skills, "opaque_name_share": share},
    )


def parse_dims(value: str | Iterable[str] | None) -> list[str]:
    """``"skills,tools"`` or a list -> validated family names (default: all five)."""
    if value is None:
        return list(DIMS)
    items = [v.strip() for v in (value.split(",") if isinstance(value, str) else value)]
    items = [v for v in items if v]
    unknown = [v for v in items if v not in DIMS]
    if unknown or not items:
        raise ValueError(
            f"unknown dimension(s) {', '.join(unknown) or '(none given)'}; "
            f"choose from: {', '.join(DIMS)}"
        )
    return [d for d in DIMS if d in items]


@dataclass
class Variant:
    """An augmented Harness and the record of how it differs from its parent."""

    bundle: Bundle
    mapping: HarnessMapping
    parent: Bundle
    rejected_rewrites: list[str] = field(default_factory=list)

    def summary(self) -> list[str]:
        """What changed, in words (the Harness format's diff summary)."""
        return summarise(self.parent, self.bundle)

    def then(self, later: Variant) -> Variant:
        """This variant followed by ``later`` (which must be built on this variant's bundle)."""
        if later.parent.digest != self.bundle.digest:
            raise ValueError("the later variant was not made from this variant's bundle")
        return Variant(
            later.bundle,
            self.mapping.then(later.mapping),
            self.parent,
            self.rejected_rewrites + later.rejected_rewrites,
        )


def augment_bundle(
    *,
    bundle: Bundle,
    seed: int,
    dims: Iterable[str] | str | None = None,
    envelope: Envelope | None = None,
    requirements: Requirements | None = None,
    rewriter: Rewriter | None = None,
) -> Variant:
    """One validated variant of ``bundle``; the same arguments give byte-identical files."""
    chosen = parse_dims(dims)
    ctx = AugmentContext(
        draft=Draft(bundle),
        seed=int(seed),
        envelope=envelope or default_envelope(),
        requirements=requirements or Requirements(),
        mapping=HarnessMapping(source_digest=bundle.digest, seed=int(seed), dims=chosen),
        rewriter=rewriter,
    )
    for dim in _ORDER:
        if dim in chosen:
            _APPLY[dim](ctx)
    variant_bundle = load_mapping(
        ctx.draft.render(), source=f"{bundle.source or bundle.name}~hsa{seed}"
    )
    ctx.mapping.variant_digest = variant_bundle.digest
    return Variant(variant_bundle, ctx.mapping, bundle, ctx.rejected_rewrites)


def transform_skill_identifiers(
    *,
    bundle: Bundle,
    seed: int,
    envelope: Envelope | None = None,
    requirements: Requirements | None = None,
    rewriter: Rewriter | None = None,
) -> Variant:
    """Family 1: rename skills, rewrite their descriptions, add synthetic and noise skills,
    mask skills no gold label needs (``envelope.skills``)."""
    return augment_bundle(
        bundle=bundle,
        seed=seed,
        dims=["skills"],
        envelope=envelope,
        requirements=requirements,
        rewriter=rewriter,
    )


def transform_skill_content(
    *,
    bundle: Bundle,
    seed: int,
    envelope: Envelope | None = None,
    requirements: Requirements | None = None,
    rewriter: Rewriter | None = None,
) -> Variant:
    """Family 2: paraphrase rules, mask non-essential rules, reorder rules
    (``envelope.skill_content``)."""
    return augment_bundle(
        bundle=bundle,
        seed=seed,
        dims=["skill-content"],
        envelope=envelope,
        requirements=requirements,
        rewriter=rewriter,
    )


def transform_tools(
    *,
    bundle: Bundle,
    seed: int,
    envelope: Envelope | None = None,
    requirements: Requirements | None = None,
    rewriter: Rewriter | None = None,
) -> Variant:
    """Family 3: rename tools, rewrite tool and parameter descriptions, reorder the
    registry; bindings and argument schemas unchanged (``envelope.tools``)."""
    return augment_bundle(
        bundle=bundle,
        seed=seed,
        dims=["tools"],
        envelope=envelope,
        requirements=requirements,
        rewriter=rewriter,
    )


def transform_prompt(
    *,
    bundle: Bundle,
    seed: int,
    envelope: Envelope | None = None,
    requirements: Requirements | None = None,
    rewriter: Rewriter | None = None,
) -> Variant:
    """Family 4: reorder prompt blocks and their list items, paraphrase items, perturb
    numeric constraints (``envelope.prompt``)."""
    return augment_bundle(
        bundle=bundle,
        seed=seed,
        dims=["prompt"],
        envelope=envelope,
        requirements=requirements,
        rewriter=rewriter,
    )


def transform_hooks(
    *,
    bundle: Bundle,
    seed: int,
    envelope: Envelope | None = None,
    requirements: Requirements | None = None,
    rewriter: Rewriter | None = None,
) -> Variant:
    """Family 5: retry budget and exhaustion, message wording and structure, hook
    parameters and banned phrases (``envelope.hooks``)."""
    return augment_bundle(
        bundle=bundle,
        seed=seed,
        dims=["hooks"],
        envelope=envelope,
        requirements=requirements,
        rewriter=rewriter,
    )
