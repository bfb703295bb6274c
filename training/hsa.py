"""A pool of HSA variants of one Harness, valid for every case of a training set.

Building a variant (``harness.augment.augment_bundle``) and starting an agent
for it (its MCP marketing server is a subprocess) cost more than replaying a
trajectory, so training draws each case's K variants from a seeded pool rather
than augmenting per case. The pool's variants honour the merged requirements of
all cases (no gold skill masked, enough rounds and retries for the recorded gold
trajectories), so every case's gold labels stay valid under every variant.
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Any

from harness.bundle import Bundle


@dataclass
class PoolEntry:
    """One Harness in the pool: the original (mapping None) or a variant."""

    name: str
    bundle: Bundle
    mapping: Any = None  # harness.augment.HarnessMapping for variants
    agent: Any = None

    @property
    def augmented(self) -> bool:
        return self.mapping is not None

    def remap_case(self, case: dict[str, Any]) -> dict[str, Any]:
        return self.mapping.remap_case(case) if self.mapping is not None else case

    def remap_trajectory(self, trajectory: dict[str, Any]) -> dict[str, Any]:
        return self.mapping.remap_trajectory(trajectory) if self.mapping is not None else trajectory


@dataclass
class HarnessPool:
    """The original Harness and ``size`` variants, each with a running agent."""

    original: PoolEntry
    variants: list[PoolEntry] = field(default_factory=list)

    def choose_variants(self, rng: random.Random, k: int) -> list[PoolEntry]:
        if k <= 0 or not self.variants:
            return []
        return rng.sample(self.variants, min(k, len(self.variants)))

    def draw(self, rng: random.Random, augmented_fraction: float) -> PoolEntry:
        if self.variants and rng.random() < augmented_fraction:
            return rng.choice(self.variants)
        return self.original

    def close(self) -> None:
        for entry in [self.original, *self.variants]:
            if entry.agent is not None:
                entry.agent.close()


def merged_requirements(cases: list[dict[str, Any]], *, rounds: int = 4, retries: int = 1):
    from harness.augment import Requirements, requirements_from_case

    base = Requirements(rounds=rounds, retries=retries)
    return functools.reduce(lambda acc, case: acc.merge(requirements_from_case(case)), cases, base)


def variant_seeds(pool_seed: int, size: int) -> list[int]:
    """Seeds of a pool's variants; a variant is named ``hsa<seed>`` (``PoolEntry.name``)."""
    return [pool_seed * 1000 + i for i in range(size)]


def build_pool(
    *,
    bundle: Bundle,
    size: int,
    seed: int,
    dims: list[str],
    cases: list[dict[str, Any]],
    catalogue: Any,
    policy: Any = None,
    agent_kwargs: dict[str, Any] | None = None,
) -> HarnessPool:
    """The original plus ``size`` seeded variants, each with an ``Agent`` (policy set per run)."""
    from harness.policies import ScriptedPolicy
    from harness.runtime import Agent

    kwargs = dict(agent_kwargs or {})
    requirements = merged_requirements(cases)

    def agent_for(b: Bundle):
        return Agent(bundle=b, policy=policy or ScriptedPolicy([]), catalogue=catalogue, **kwargs)

    pool = HarnessPool(original=PoolEntry(name="original", bundle=bundle, agent=agent_for(bundle)))
    if size > 0:
        from harness.augment import augment_bundle

        for variant_seed in variant_seeds(seed, size):
            variant = augment_bundle(
                bundle=bundle, seed=variant_seed, dims=dims, requirements=requirements
            )
            pool.variants.append(
                PoolEntry(
                    name=f"hsa{variant_seed}",
                    bundle=variant.bundle,
                    mapping=variant.mapping,
                    agent=agent_for(variant.bundle),
                )
            )
    return pool
