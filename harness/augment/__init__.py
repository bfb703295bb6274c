"""Harness-State Augmentation (HSA): task-preserving variants of a Harness.

One Harness becomes many: skills renamed, re-described, added, masked; rules
paraphrased, masked, reordered; tools renamed and re-described; prompt blocks
and items reordered and constraints moved; hooks' retry behaviour, messages
and parameters varied. Every change stays inside the change envelope
(``envelope.yaml``), every variant validates, and its :class:`HarnessMapping`
carries gold labels and recorded trajectories over to the new names.
"""

from __future__ import annotations

from harness.augment.envelope import Envelope, EnvelopeError, load_envelope, parse_envelope
from harness.augment.gold_replay import ReplayResult, replay_under_variant
from harness.augment.mapping import HarnessMapping, MappingError
from harness.augment.paraphrase import OfflineParaphraser, checked_rewrite
from harness.augment.pipeline import (
    DIMS,
    Variant,
    augment_bundle,
    parse_dims,
    transform_hooks,
    transform_prompt,
    transform_skill_content,
    transform_skill_identifiers,
    transform_tools,
)
from harness.augment.preserve import violations
from harness.augment.requirements import Requirements, requirements_from_case

__all__ = [
    "DIMS",
    "Envelope",
    "EnvelopeError",
    "HarnessMapping",
    "MappingError",
    "OfflineParaphraser",
    "ReplayResult",
    "Requirements",
    "Variant",
    "augment_bundle",
    "checked_rewrite",
    "load_envelope",
    "parse_dims",
    "parse_envelope",
    "replay_under_variant",
    "requirements_from_case",
    "transform_hooks",
    "transform_prompt",
    "transform_skill_content",
    "transform_skill_identifiers",
    "transform_tools",
    "violations",
]
