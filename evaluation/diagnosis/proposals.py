"""Proposals and the diagnosis they belong to; the interface every diagnoser implements.

A *proposal* is one root cause with concrete edits: a title, the rationale, the
cluster of failed cases it targets, the structured edits, and the name of the
diagnoser that produced it. ``validate_proposal`` applies the edits to the
Harness files through :func:`harness.load_mapping`; a proposal is only shown as
acceptable when that succeeds, and it then carries the unified diff a reviewer
reads before accepting.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from evaluation.diagnosis.clustering import Cluster, cluster_failures
from evaluation.diagnosis.edits import Edit, EditError, apply_edits
from evaluation.diagnosis.evidence import model_not_harness
from evaluation.diagnosis.records import FailureCase
from harness import load_mapping
from harness.bundle import Bundle
from harness.diff import diff_bundles


@dataclass
class Proposal:
    """One root cause and the edits that should fix it."""

    title: str
    rationale: str
    reason: str  # the judge reason code of the targeted cluster
    target_case_ids: list[str]
    edits: list[Edit]
    diagnoser: str
    cluster_index: int = -1
    valid: bool = False
    problems: list[str] = field(default_factory=list)
    diff: dict[str, str] = field(default_factory=dict)  # path -> unified diff
    summary: list[str] = field(default_factory=list)
    evidence: list[str] = field(
        default_factory=list
    )  # what in the targeted trajectories backs each edit
    replay: dict[str, Any] = field(
        default_factory=dict
    )  # the targeted cases re-scored with the edits applied

    @property
    def key(self) -> str:
        """Stable id of the edits (the same edits proposed twice get the same key)."""
        payload = json.dumps([e.to_dict() for e in self.edits], sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "rationale": self.rationale,
            "reason": self.reason,
            "target_case_ids": self.target_case_ids,
            "edits": [e.to_dict() for e in self.edits],
            "diagnoser": self.diagnoser,
            "cluster_index": self.cluster_index,
            "valid": self.valid,
            "problems": self.problems,
            "diff": self.diff,
            "summary": self.summary,
            "evidence": self.evidence,
            "replay": self.replay,
        }


class Diagnoser(Protocol):
    """Turns ranked failure clusters into proposals for one Harness."""

    name: str

    def propose(self, *, clusters: list[Cluster], bundle: Bundle) -> list[Proposal]: ...


@dataclass
class Diagnosis:
    """What a diagnosis run found: counts, ranked clusters, validated proposals and the overall
    finding."""

    diagnoser: str
    total: int
    failed: int
    clusters: list[Cluster]
    proposals: list[Proposal]
    finding: str = ""  # e.g. "the model, not the Harness: ..." (evidence.model_not_harness)

    def to_dict(self) -> dict[str, Any]:
        return {
            "diagnoser": self.diagnoser,
            "total": self.total,
            "failed": self.failed,
            "finding": self.finding,
            "clusters": [c.to_dict() for c in self.clusters],
            "proposals": [p.to_dict() for p in self.proposals],
        }


def validate_proposal(proposal: Proposal, *, files: dict[str, str]) -> Proposal:
    """Apply the proposal's edits to ``files``; record validity, problems and the diff."""
    if proposal.problems:  # the diagnoser's own output was malformed: nothing to apply
        proposal.valid, proposal.diff, proposal.summary = False, {}, []
        return proposal
    try:
        _, edited = apply_edits(files, proposal.edits)
    except EditError as exc:
        proposal.valid, proposal.problems, proposal.diff, proposal.summary = (
            False,
            [str(exc)],
            {},
            [],
        )
        return proposal
    change = diff_bundles(load_mapping(files), edited)
    proposal.valid = bool(change.files)
    proposal.problems = [] if change.files else ["the edits change nothing"]
    proposal.diff, proposal.summary = dict(change.files), list(change.summary)
    return proposal


def diagnose(
    *,
    failures: list[FailureCase],
    total: int,
    files: dict[str, str],
    diagnoser: Diagnoser,
    max_clusters: int = 8,
) -> Diagnosis:
    """Cluster ``failures``, ask ``diagnoser`` for proposals, validate each against ``files``."""
    bundle = load_mapping(files)
    clusters = cluster_failures(failures)[:max_clusters]
    proposals = diagnoser.propose(clusters=clusters, bundle=bundle)
    seen: set[str] = set()
    kept = []
    for proposal in proposals:
        if proposal.key in seen:
            continue
        seen.add(proposal.key)
        kept.append(validate_proposal(proposal, files=files))
    return Diagnosis(
        diagnoser=diagnoser.name,
        total=total,
        failed=len(failures),
        clusters=clusters,
        proposals=kept,
        finding=model_not_harness(failures),
    )
