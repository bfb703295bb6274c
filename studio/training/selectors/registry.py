"""The checkpoint registry: every studio run's final model with its card and evaluations, and the
MTP draft heads adapted to each (matched by the checkpoint's fingerprint, ``harness.checkpoints``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.checkpoints import is_checkpoint
from studio.training.models import TrainingRun
from studio.training.selectors.runs import run_list


@dataclass
class CheckpointEntry:
    """One registry row: a training run's final model with its facts and its evaluations."""

    run: TrainingRun
    path: Path
    card: dict[str, Any]
    evaluations: list[TrainingRun]
    harness_version: Any
    draft_head: DraftHeadEntry | None = None
    stale_head: DraftHeadEntry | None = None  # the newest head of its shape made for another policy

    @property
    def stage(self) -> str:
        return self.card.get("stage", self.run.kind)


@dataclass
class DraftHeadEntry:
    """A finished MTP run's head: the policy it was adapted to (its card) and its held-out
    acceptance."""

    run: TrainingRun
    path: Path
    card: dict[str, Any]
    config: Any  # harness.draft_head_files.DraftConfig

    @property
    def acceptance(self) -> dict[str, Any]:
        return self.card.get("acceptance_held_out") or {}


def draft_heads() -> list[DraftHeadEntry]:
    """Every finished studio MTP run's head, newest first, read with the engine's own readers."""
    from harness.draft_head_files import DraftHeadError, read_card, read_config

    heads = []
    for run in TrainingRun.objects.filter(kind=TrainingRun.MTP).select_related("job"):
        final = run.final_dir
        if final is None or not (final.parent / "model_card.json").is_file():
            continue  # not finished: a head is only listed once its card is written
        try:
            heads.append(
                DraftHeadEntry(
                    run=run, path=final, card=read_card(final), config=read_config(final)
                )
            )
        except DraftHeadError:
            continue
    return heads


def head_for_checkpoint(
    *, path: Path, heads: list[DraftHeadEntry]
) -> tuple[DraftHeadEntry | None, DraftHeadEntry | None]:
    """(the newest head adapted to the checkpoint at ``path``, the newest head of its shape adapted
    to another).

    A head is this checkpoint's when its card's ``policy_fingerprint`` is the checkpoint's
    (``harness.checkpoints.fingerprint``, what the SGLang launcher checks) and its dimensions fit
    the checkpoint's config (``policy_mismatch``); one of the same shape made for another policy is
    stale here, but a good start for re-adapting (``init_head``)."""
    from types import SimpleNamespace

    from harness.checkpoints import CheckpointError, checkpoint_config
    from harness.draft_head_files import policy_mismatch

    try:
        policy = SimpleNamespace(**checkpoint_config(path))
    except (CheckpointError, TypeError):
        return None, None
    fits = []
    for head in heads:
        try:
            if not policy_mismatch(head.config, policy):
                fits.append(head)
        except (AttributeError, TypeError):  # a config.json without a model's dimensions
            continue
    if not fits:
        return None, None
    fingerprint = _fingerprint(path)
    if fingerprint is None:
        return None, None
    own = next((h for h in fits if h.card.get("policy_fingerprint") == fingerprint), None)
    stale = next((h for h in fits if h.card.get("policy_fingerprint") != fingerprint), None)
    return own, stale


def _fingerprint(path: Path) -> str | None:
    """``harness.checkpoints.fingerprint`` (every file's digest, kept in memory by file stats, so a
    view that lists the same checkpoints again reads nothing); None when the folder cannot be
    read."""
    from harness.checkpoints import CheckpointError, fingerprint

    try:
        return fingerprint(path)
    except CheckpointError:
        return None


def checkpoint_registry(*, with_heads: bool = True) -> list[CheckpointEntry]:
    """Every studio training run whose final model exists, newest first, with the evaluations of it
    and (``with_heads``) the draft head adapted to it (a head is not a checkpoint: MTP runs are not
    rows here)."""
    from studio.harnesses.models import HarnessVersion

    runs = [r for r in run_list(limit=500) if r.is_policy]
    evaluations: dict[int, list[TrainingRun]] = {}
    for evaluation in TrainingRun.objects.filter(
        kind=TrainingRun.EVAL, parent__isnull=False
    ).select_related("job"):
        evaluations.setdefault(evaluation.parent_id, []).append(evaluation)
    entries = []
    for run in runs:
        final = run.final_dir
        if not is_checkpoint(final):
            continue
        card = (run.summary or {}).get("model_card")
        if card is None:
            card_path = final.parent / "model_card.json"
            card = json.loads(card_path.read_text(encoding="utf-8")) if card_path.is_file() else {}
        entries.append(
            CheckpointEntry(
                run=run,
                path=final,
                card=card,
                evaluations=evaluations.get(run.pk, []),
                harness_version=run.harness_version,
            )
        )
    # a checkpoint trained outside a studio version still names its Harness by digest: link the
    # version
    digests = {e.card.get("harness_digest") for e in entries if e.harness_version is None} - {
        None,
        "",
    }
    versions = {
        v.digest: v
        for v in HarnessVersion.objects.filter(digest__in=digests).select_related("harness")
    }
    for entry in entries:
        entry.harness_version = entry.harness_version or versions.get(
            entry.card.get("harness_digest")
        )
    heads = draft_heads() if with_heads else []
    if (
        heads
    ):  # fingerprints read a checkpoint's first and last MiB: only when there are heads to match
        for entry in entries:
            entry.draft_head, entry.stale_head = head_for_checkpoint(path=entry.path, heads=heads)
    return entries


def checkpoint_choices() -> list[tuple[str, str]]:
    """(absolute final/ path, label) of the registry's checkpoints, for the forms' model fields."""
    return [
        (str(entry.path), f"run #{entry.run.pk} {entry.stage}: {entry.run.title}")
        for entry in checkpoint_registry(with_heads=False)
    ]
