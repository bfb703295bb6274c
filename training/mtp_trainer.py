"""MTP draft-head adaptation: the policy frozen, the head trained on the policy's own rollouts
(docs/architecture.md §9).

Three steps, each resumable in the run folder (step 1 in ``training.mtp_rollouts``, step 2's
forward pass, loss and acceptance in ``training.mtp_loss``, the stage that runs them here):

1. **Rollouts** (``RUN/rollouts/NNNN.pt``, one file per case). The frozen policy runs
   the live-room cases through the agent runtime (``training.rollout.HarnessRollout``:
   the original Harness or an HSA variant per case), greedy, on the local engine. Every
   model call becomes one training sequence: its prompt and the tokens the policy wrote,
   with the policy's final-normalised hidden state at every position (kept by the engine,
   ``SamplingParams.keep_states``; positions taken from the prefix store get theirs from
   the earlier call that computed them). The head learns the distribution it will serve:
   this policy, under these Harnesses.
2. **Training.** For each anchor t whose next token ``y_{t+1}`` the policy wrote, step 1
   of the head sees ``(h_t, y_{t+1})`` and predicts ``y_{t+2}``; step k sees step k-1's
   output and ``y_{t+k}`` and predicts ``y_{t+1+k}``. Attention is what the engine does at
   serving time: step k at anchor t attends over step 1's keys of positions <= t (the
   real ones) and its own chain's earlier steps. The loss is docs/architecture.md §9's,
   ``L = -(1/Z) sum_k w_k sum_t log p_k(y_{t+1+k} | ...)``, ``Z = sum_k w_k n_k``, with
   ``w_k = step_weight_decay ** (k-1)`` (1: uniform). AdamW, warm-up then cosine decay;
   ``metrics.jsonl`` has loss and top-1 accuracy per step k.
3. **Result.** ``RUN/final/``: the head in the format SGLang loads (``serving.engine.draft_head``)
   and its ``card.json`` (policy path and fingerprint, data, steps, acceptance on the held-out
   rollouts measured the way greedy speculative decoding accepts: the head's own drafts,
   chained, against what the policy wrote).
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

import torch

from training.mtp_config import MTPStageConfig
from training.mtp_loss import offline_acceptance, sequence_loss
from training.mtp_rollouts import collect_rollouts, hot_tokens, split_rollouts


def _lr(step: int, config: MTPStageConfig) -> float:
    if step < config.warmup_steps:
        return config.learning_rate * (step + 1) / config.warmup_steps
    span = max(config.max_steps - config.warmup_steps, 1)
    progress = min((step - config.warmup_steps) / span, 1.0)
    return config.learning_rate * 0.5 * (1 + math.cos(math.pi * progress))


def _draw(index: int, n: int, seed: int) -> int:
    """The sequence of the index-th draw: a fresh permutation per epoch, so a resumed run continues
    the same order."""
    order = list(range(n))
    random.Random(f"mtp-order:{seed}:{index // n}").shuffle(order)
    return order[index % n]


def _save_checkpoint(
    run_dir: Path, step: int, head: Any, optimizer: Any, policy_config: Any, keep: int
) -> None:
    from training.runs import checkpoint_step

    folder = run_dir / f"checkpoint-{step}"
    head.save(folder, policy_config=policy_config)
    torch.save(optimizer.state_dict(), folder / "optimizer.pt")
    (folder / "trainer_state.json").write_text(
        json.dumps({"global_step": step}) + "\n", encoding="utf-8"
    )
    done = sorted(
        (p for p in run_dir.glob("checkpoint-*") if (p / "trainer_state.json").is_file()),
        key=checkpoint_step,
    )
    for old in done[: -max(keep, 1)]:
        for child in old.iterdir():
            child.unlink()
        old.rmdir()


def run_mtp(config: MTPStageConfig, *, log=None) -> Path:
    """Adapt a draft head to ``config.model`` and return the head folder (``RUN/final``)."""
    from harness import load_dir
    from harness.checkpoints import checkpoint_info
    from serving.engine.draft_head import DraftHead, load_head
    from serving.engine.policy import load_model
    from training.runs import (
        ModelCard,
        append_metrics,
        base_model_of,
        checkpoint_step,
        drop_metrics_after,
    )
    from training.stage_common import resolve_harness_dir, start_stage

    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    if config.threads:
        torch.set_num_threads(config.threads)
    run = start_stage(config, stage="mtp")
    hf_model, tokenizer = load_model(run.model_dir)
    for p in hf_model.parameters():
        p.requires_grad_(False)
    started = time.perf_counter()
    records = collect_rollouts(
        config, run_dir=run.run_dir, hf_model=hf_model, tokenizer=tokenizer, log=log
    )
    rollout_s = time.perf_counter() - started
    train, held = split_rollouts(
        records, held_out=config.held_out, seed=config.seed, max_context=config.max_context
    )
    if not train:
        raise ValueError(
            "the rollouts have no policy-written tokens to train on (every call was empty)"
        )
    head = (
        load_head(config.init_head, hf_model)
        if config.init_head
        else DraftHead.for_policy(hf_model, layout=config.layout, steps=config.draft_steps)
    )
    if head.config.layout != config.layout:
        raise ValueError(
            f"init_head: its layout is {head.config.layout}, the config asks for {config.layout}"
        )
    head.config.steps = config.draft_steps
    head.set_hot_tokens(hot_tokens(train, config.hot_vocab, head.config.vocab_size))
    head.train()
    optimizer = torch.optim.AdamW(
        head.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay
    )
    step = 0
    metrics_path = run.run_dir / "metrics.jsonl"
    if run.resume_from:
        step = checkpoint_step(run.resume_from)
        resumed = load_head(run.resume_from, hf_model)
        head.load_state_dict(resumed.state_dict())
        optimizer.load_state_dict(
            torch.load(Path(run.resume_from) / "optimizer.pt", weights_only=True)
        )
        log(f"resumed from {run.resume_from} (step {step})")
    drop_metrics_after(metrics_path, step)
    acceptance_before = None
    if step == 0:
        acceptance_before = offline_acceptance(head, held, steps=config.draft_steps)
        log(f"held-out acceptance before training: {acceptance_before}")
    weights = [config.step_weight_decay**k for k in range(config.draft_steps)]
    last_steps = config.stop_after_steps or config.max_steps
    window: list[list[dict[str, float]]] = []
    window_loss = window_z = 0.0
    tick, tick_tokens = time.perf_counter(), 0
    while step < last_steps:
        for group in optimizer.param_groups:
            group["lr"] = _lr(step, config)
        optimizer.zero_grad(set_to_none=True)
        batch_loss, batch_z, batch_stats = torch.zeros(()), 0.0, []
        for j in range(config.per_device_train_batch_size):
            seq = train[
                _draw(step * config.per_device_train_batch_size + j, len(train), config.seed)
            ]
            loss, z, per_step = sequence_loss(head, seq, steps=config.draft_steps, weights=weights)
            batch_loss, batch_z = batch_loss + loss, batch_z + z
            batch_stats.append(per_step)
            tick_tokens += int(seq.tokens.shape[0])
        if batch_z:
            (batch_loss / batch_z).backward()
            grad_norm = float(
                torch.nn.utils.clip_grad_norm_(head.parameters(), config.max_grad_norm)
            )
            optimizer.step()
        else:
            grad_norm = 0.0
        step += 1
        window.extend(batch_stats)
        window_loss += float(batch_loss)
        window_z += batch_z
        if step % config.logging_steps == 0 or step == last_steps:
            now = time.perf_counter()
            row: dict[str, Any] = {
                "stage": "mtp",
                "step": step,
                "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()),
                "loss": round(window_loss / window_z, 5) if window_z else None,
                "learning_rate": optimizer.param_groups[0]["lr"],
                "grad_norm": round(grad_norm, 5),
                "tokens_per_s": round(tick_tokens / max(now - tick, 1e-9), 2),
            }
            for k in range(config.draft_steps):
                n = sum(s[k]["n"] for s in window)
                if n:
                    row[f"loss_step_{k + 1}"] = round(sum(s[k]["ce"] for s in window) / n, 5)
                    row[f"accuracy_step_{k + 1}"] = round(
                        sum(s[k]["correct"] for s in window) / n, 5
                    )
            append_metrics(metrics_path, row)
            log(
                f"step {step}/{last_steps}: loss {row['loss']} "
                + " ".join(
                    f"acc{k + 1} {row.get(f'accuracy_step_{k + 1}')}"
                    for k in range(config.draft_steps)
                )
            )
            window, window_loss, window_z = [], 0.0, 0.0
            tick, tick_tokens = now, 0
        if step % config.save_steps == 0 or step == last_steps:
            _save_checkpoint(
                run.run_dir, step, head, optimizer, hf_model.config, config.save_total_limit
            )
    head.eval()
    after = offline_acceptance(head, held, steps=config.draft_steps)
    log(f"held-out acceptance after training: {after}")
    bundle = load_dir(resolve_harness_dir(config.harness))
    data = {
        "cases": len(records),
        "augmented": sum(bool(r["augmented"]) for r in records),
        "harnesses": sorted({r["harness"] for r in records}),
        "train_sequences": len(train),
        "held_out_sequences": len(held),
        "written_tokens": sum(int(s.written.sum()) for s in train),
    }
    card = {
        "stage": "mtp",
        "policy": str(run.model_dir),
        "policy_fingerprint": checkpoint_info(run.model_dir)["fingerprint"],
        "layout": config.layout,
        "draft_steps": config.draft_steps,
        "init_head": config.init_head or None,
        "hot_vocab_size": head.config.hot_vocab_size,
        "step_weight_decay": config.step_weight_decay,
        "steps": step,
        "data": data,
        "acceptance_held_out": after,
        "acceptance_held_out_before": acceptance_before,
        "rollout_wall_time_s": round(rollout_s, 1),
        "wall_time_s": round(time.perf_counter() - started, 1),
    }
    final = head.save(run.final_dir, policy_config=hf_model.config, card=card)
    ModelCard(
        stage="mtp",
        base_model=base_model_of(run.model_dir),
        parent_checkpoint=str(run.model_dir),
        data=data,
        harness_name=bundle.name,
        harness_digest=bundle.digest,
        steps=step,
        wall_time_s=time.perf_counter() - run.started,
        trainer="training.mtp_trainer (plain torch, AdamW)",
        extra={
            "head": str(final),
            "acceptance_held_out": after,
            "layout": config.layout,
            "draft_steps": config.draft_steps,
        },
    ).write(run.run_dir)
    return final
