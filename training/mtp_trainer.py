"""MTP draft-head adaptation: the policy frozen, the head trained on the policy's own rollouts (SPEC §9).

Three steps, each resumable in the run folder:

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
   real ones) and its own chain's earlier steps. The loss is SPEC §9's,
   ``L = -(1/Z) sum_k w_k sum_t log p_k(y_{t+1+k} | ...)``, ``Z = sum_k w_k n_k``, with
   ``w_k = step_weight_decay ** (k-1)`` (1: uniform). AdamW, warm-up then cosine decay;
   ``metrics.jsonl`` has loss and top-1 accuracy per step k.
3. **Result.** ``RUN/final/``: the head in the format SGLang loads (``harness.engine.draft``)
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
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from training.mtp_config import MTPStageConfig

ROLLOUT_DIR = "rollouts"


@dataclass
class RolloutSequence:
    """One model call of a rollout: tokens, the policy's hidden states, which tokens it wrote."""

    tokens: torch.Tensor  # [L] long
    states: torch.Tensor  # [L - 1, hidden] float16: the hidden state of positions 0 .. L - 2
    written: torch.Tensor  # [L] bool: True where the policy wrote the token (the call's output)
    offset: int = 0  # position of tokens[0] (sequences longer than max_context keep their end)

    def anchors(self) -> torch.Tensor:
        """Positions t whose next token the policy wrote and whose step-1 target exists."""
        length = self.tokens.shape[0]
        t = torch.arange(max(length - 2, 0))
        return t[self.written[1: length - 1]]

    def clipped(self, max_context: int) -> RolloutSequence:
        cut = max(self.tokens.shape[0] - max_context, 0)
        if not cut:
            return self
        return RolloutSequence(self.tokens[cut:], self.states[cut:], self.written[cut:], self.offset + cut)


# -- 1. rollouts ------------------------------------------------------------------------------


class _StateCapture:
    """Wraps the rollout engine: every call keeps its hidden states, prefix-cached ones included."""

    KEEP = 32  # recent sequences whose states can fill a later call's cached prefix

    def __init__(self, engine: Any, engine_model: Any) -> None:
        self.engine = engine
        self.engine_model = engine_model
        self.recent: list[tuple[torch.Tensor, torch.Tensor]] = []  # (tokens with states, states)
        self.calls: list[RolloutSequence] = []

    def _prefix_states(self, prefix: torch.Tensor) -> torch.Tensor:
        from harness.engine.prefix import common_prefix

        n = prefix.shape[0]
        for tokens, states in reversed(self.recent):
            if tokens.shape[0] >= n and common_prefix(tokens, prefix) >= n:
                return states[:n]
        # not among the recent sequences: compute them (same numbers as the engine's prefill)
        with torch.inference_mode():
            seq = self.engine_model.new_sequence(n + 1)
            _, states = self.engine_model.prefill(seq, prefix, states=True)
        return states.half()

    def generate(self, prompt: list[int], params: Any) -> Any:
        done = self.engine.generate(prompt, replace(params, keep_states=True))
        states = done.states.half() if done.states is not None else torch.empty(0, self.engine_model.hidden)
        if done.cached_tokens:
            states = torch.cat([self._prefix_states(torch.tensor(prompt[: done.cached_tokens])), states])
        tokens = torch.tensor(list(prompt) + list(done.ids), dtype=torch.long)
        if states.shape[0] != tokens.shape[0] - 1:
            raise RuntimeError(f"rollout call: {states.shape[0]} hidden states for {tokens.shape[0]} tokens")
        written = torch.zeros(tokens.shape[0], dtype=torch.bool)
        written[len(prompt):] = True
        self.calls.append(RolloutSequence(tokens=tokens, states=states, written=written))
        self.recent = (self.recent + [(tokens[:-1], states)])[-self.KEEP:]
        return done


def collect_rollouts(config: MTPStageConfig, *, run_dir: Path, hf_model: Any, tokenizer: Any,
                     log=print) -> list[dict[str, Any]]:
    """Roll out every case once (skipping those already on disk); the saved records, in case order."""
    from harness import load_dir
    from harness.engine import Engine, EngineModel
    from harness.policies import GenerationSettings
    from training.cases import training_cases
    from training.hsa import build_pool
    from training.rollout import HarnessRollout
    from training.stage_common import resolve_harness_dir

    folder = run_dir / ROLLOUT_DIR
    folder.mkdir(parents=True, exist_ok=True)
    source = training_cases(config.cases, limit=config.max_cases)
    if len(source.cases) < 2:
        raise ValueError(f"cases: {source.name} has {len(source.cases)} case(s); the MTP stage needs at least 2")
    todo = [i for i in range(len(source.cases)) if not (folder / f"{i:04d}.pt").is_file()]
    if todo:
        bundle = load_dir(resolve_harness_dir(config.harness))
        settings = GenerationSettings(temperature=0.0, max_new_tokens=config.rollout_max_new_tokens)
        pool = build_pool(bundle=bundle, size=config.variant_pool_size if config.augmented_fraction > 0 else 0,
                          seed=config.seed, dims=config.hsa_dims, cases=source.cases, catalogue=source.catalogue,
                          agent_kwargs={"trajectory_budget_s": config.rollout_budget_s, "generation": settings})
        rollout = HarnessRollout(pool=pool, cases={c["id"]: c for c in source.cases}, tokenizer=tokenizer,
                                 settings=settings, augmented_fraction=config.augmented_fraction,
                                 failure_rate=0.0, seed=config.seed)
        engine_model = EngineModel(hf_model)
        engine = Engine(engine_model, name="mtp-rollouts")
        capture = _StateCapture(engine, engine_model)
        try:
            for n, i in enumerate(todo, 1):
                case = source.cases[i]
                started = time.perf_counter()
                capture.calls = []
                result = rollout.run_one(hf_model, case["id"], rng=random.Random(f"{config.seed}:{i}"), draw=i,
                                         engine=capture)
                record = {"case": case["id"], "harness": result["harness"], "augmented": result["augmented"],
                          "sequences": [{"tokens": s.tokens, "states": s.states, "written": s.written}
                                        for s in capture.calls]}
                tmp = folder / f"{i:04d}.pt.tmp"
                torch.save(record, tmp)
                tmp.replace(folder / f"{i:04d}.pt")
                written = sum(int(s.written.sum()) for s in capture.calls)
                log(f"rollout {n}/{len(todo)}: case {case['id']} under {result['harness']}: "
                    f"{len(capture.calls)} call(s), {written} tokens written, {time.perf_counter() - started:.1f} s")
        finally:
            engine.close()
            pool.close()
    return [torch.load(folder / f"{i:04d}.pt", weights_only=True) for i in range(len(source.cases))]


def split_rollouts(records: list[dict[str, Any]], *, held_out: float, seed: int, max_context: int
                   ) -> tuple[list[RolloutSequence], list[RolloutSequence]]:
    """Training and held-out sequences; whole cases are held out (their calls share a prompt)."""
    order = list(range(len(records)))
    random.Random(f"mtp-split:{seed}").shuffle(order)
    n_held = max(1, round(held_out * len(records)))
    held = set(order[:n_held])
    train, test = [], []
    for i, record in enumerate(records):
        for s in record["sequences"]:
            seq = RolloutSequence(tokens=s["tokens"], states=s["states"], written=s["written"]).clipped(max_context)
            if seq.anchors().numel():
                (test if i in held else train).append(seq)
    return train, test


def hot_tokens(sequences: list[RolloutSequence], size: int, vocab_size: int) -> torch.Tensor | None:
    """The draft vocabulary: the tokens the policy wrote, most frequent first, then prompt tokens."""
    from collections import Counter

    if not size or size >= vocab_size:
        return None
    written, prompt = Counter(), Counter()
    for seq in sequences:
        written.update(seq.tokens[seq.written].tolist())
        prompt.update(seq.tokens[~seq.written].tolist())
    order = [t for t, _ in written.most_common()]
    seen = set(order)
    order += [t for t, _ in prompt.most_common() if t not in seen]
    return torch.tensor(sorted(order[:size]), dtype=torch.long)


# -- 2. the loss --------------------------------------------------------------------------------


def _expand(x: torch.Tensor, group: int) -> torch.Tensor:
    return x.repeat_interleave(group, dim=1) if group > 1 else x


def chain_forward(head: Any, seq: RolloutSequence, *, steps: int, teacher_forced: bool
                  ) -> tuple[torch.Tensor, list[torch.Tensor], list[torch.Tensor]]:
    """The head's K draft steps at every anchor of ``seq``.

    Returns the anchors ``[n]`` and, per step k, the logits ``[n, vocab]`` and the target ids ``[n]``
    (-1 where ``t + 1 + k`` is past the sequence). ``teacher_forced``: step k is fed ``y_{t+k}``
    (training); otherwise the head's own draft from step k-1 (what greedy serving does).
    """
    c = head.config
    tokens, length = seq.tokens, seq.tokens.shape[0]
    h = seq.states.float()
    slots = h.shape[0]
    group = c.num_attention_heads // c.num_key_value_heads
    anchors = seq.anchors()
    n = anchors.shape[0]
    # keys and values of every slot from step 1 (the real ones every step attends to); queries, the
    # attention output and the MLP only where a chain starts (the anchors)
    x = head.fuse(h, tokens[1:])
    q1, k1, v1 = head.project(x, seq.offset + torch.arange(slots))
    k1e, v1e = _expand(k1, group), _expand(v1, group)  # [slots, heads, d]
    visible = torch.arange(slots)[None, :] <= anchors[:, None]  # [n, slots]
    x, q = x[anchors], q1[anchors]
    logits_per_step, targets_per_step = [], []
    chain_k: list[torch.Tensor] = []
    chain_v: list[torch.Tensor] = []
    out = None
    for k in range(1, steps + 1):
        if k > 1:
            if teacher_forced:
                feed = tokens[torch.clamp(anchors + k, max=length - 1)]
            else:
                feed = head.restrict(logits_per_step[-1]).argmax(-1)
            x = head.fuse(out, feed)
            q, kk, vv = head.project(x, seq.offset + anchors + k - 1)
            chain_k.append(_expand(kk, group))
            chain_v.append(_expand(vv, group))
        main = torch.einsum("nhd,shd->nhs", q, k1e) * head.scale
        main = main.masked_fill(~visible[:, None, :], float("-inf"))
        if chain_k:
            diag = torch.stack([(q * ck).sum(-1) for ck in chain_k], dim=-1) * head.scale  # [n, heads, k-1]
            main = torch.cat([main, diag], dim=-1)
        probs = torch.softmax(main, dim=-1)
        attn = torch.einsum("nhs,shd->nhd", probs[..., :slots], v1e)
        for i, cv in enumerate(chain_v):
            attn = attn + probs[..., slots + i, None] * cv
        out = head.finish(x, attn.reshape(n, -1))
        logits_per_step.append(head.logits(out))
        at = anchors + 1 + k
        targets_per_step.append(torch.where(at <= length - 1, tokens[torch.clamp(at, max=length - 1)], -1))
    return anchors, logits_per_step, targets_per_step


def sequence_loss(head: Any, seq: RolloutSequence, *, steps: int, weights: list[float]
                  ) -> tuple[torch.Tensor, float, list[dict[str, float]]]:
    """The weighted sum of per-step cross-entropies, its normaliser Z, and per-step counts."""
    _, logits, targets = chain_forward(head, seq, steps=steps, teacher_forced=True)
    total = torch.zeros(())
    z = 0.0
    per_step = []
    for k, (lg, tg) in enumerate(zip(logits, targets, strict=True)):
        valid = tg >= 0
        count = int(valid.sum())
        if count:
            ce = F.cross_entropy(lg[valid], tg[valid], reduction="sum")
            total = total + weights[k] * ce
            z += weights[k] * count
            correct = int((lg[valid].argmax(-1) == tg[valid]).sum())
        else:
            ce, correct = torch.zeros(()), 0
        per_step.append({"ce": float(ce.detach()), "n": count, "correct": correct})
    return total, z, per_step


@torch.no_grad()
def offline_acceptance(head: Any, sequences: list[RolloutSequence], *, steps: int) -> dict[str, Any]:
    """Greedy acceptance on rollouts: at each anchor the head drafts K tokens on its own, and the
    leading ones equal to what the policy wrote are accepted (what greedy speculative decoding
    keeps when a cycle starts there). Acceptance length counts the policy's own token too."""
    cycles = 0
    at_position = [0] * steps
    for seq in sequences:
        _, logits, targets = chain_forward(head, seq, steps=steps, teacher_forced=False)
        alive = torch.ones(targets[0].shape[0], dtype=torch.bool)
        for k in range(steps):
            alive = alive & (head.restrict(logits[k]).argmax(-1) == targets[k]) & (targets[k] >= 0)
            at_position[k] += int(alive.sum())
        cycles += int(targets[0].shape[0])
    accepted = sum(at_position)
    if not cycles:
        return {"cycles": 0, "acceptance_length": None, "acceptance_rate": None, "acceptance_rate_per_position": []}
    return {"cycles": cycles, "acceptance_length": round(1 + accepted / cycles, 4),
            "acceptance_rate": round(accepted / (steps * cycles), 4),
            "acceptance_rate_per_position": [round(a / cycles, 4) for a in at_position]}


# -- 3. the stage -------------------------------------------------------------------------------


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


def _save_checkpoint(run_dir: Path, step: int, head: Any, optimizer: Any, policy_config: Any, keep: int) -> None:
    from training.runs import checkpoint_step

    folder = run_dir / f"checkpoint-{step}"
    head.save(folder, policy_config=policy_config)
    torch.save(optimizer.state_dict(), folder / "optimizer.pt")
    (folder / "trainer_state.json").write_text(json.dumps({"global_step": step}) + "\n", encoding="utf-8")
    done = sorted((p for p in run_dir.glob("checkpoint-*") if (p / "trainer_state.json").is_file()),
                  key=checkpoint_step)
    for old in done[:-max(keep, 1)]:
        for child in old.iterdir():
            child.unlink()
        old.rmdir()


def run_mtp(config: MTPStageConfig, *, log=None) -> Path:
    """Adapt a draft head to ``config.model`` and return the head folder (``RUN/final``)."""
    from harness import load_dir
    from harness.checkpoints import checkpoint_info
    from harness.engine.draft import DraftHead, load_head
    from harness.policies.local import load_model
    from training.runs import ModelCard, base_model_of, checkpoint_step, drop_metrics_after
    from training.stage_common import resolve_harness_dir, start_stage

    log = log or (lambda text: print(text, file=sys.stderr, flush=True))
    if config.threads:
        torch.set_num_threads(config.threads)
    run = start_stage(config, stage="mtp")
    hf_model, tokenizer = load_model(run.model_dir)
    for p in hf_model.parameters():
        p.requires_grad_(False)
    started = time.perf_counter()
    records = collect_rollouts(config, run_dir=run.run_dir, hf_model=hf_model, tokenizer=tokenizer, log=log)
    rollout_s = time.perf_counter() - started
    train, held = split_rollouts(records, held_out=config.held_out, seed=config.seed, max_context=config.max_context)
    if not train:
        raise ValueError("the rollouts have no policy-written tokens to train on (every call was empty)")
    head = (load_head(config.init_head, hf_model) if config.init_head
            else DraftHead.for_policy(hf_model, layout=config.layout, steps=config.draft_steps))
    if head.config.layout != config.layout:
        raise ValueError(f"init_head: its layout is {head.config.layout}, the config asks for {config.layout}")
    head.config.steps = config.draft_steps
    head.set_hot_tokens(hot_tokens(train, config.hot_vocab, head.config.vocab_size))
    head.train()
    optimizer = torch.optim.AdamW(head.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    step = 0
    metrics_path = run.run_dir / "metrics.jsonl"
    if run.resume_from:
        step = checkpoint_step(run.resume_from)
        resumed = load_head(run.resume_from, hf_model)
        head.load_state_dict(resumed.state_dict())
        optimizer.load_state_dict(torch.load(Path(run.resume_from) / "optimizer.pt", weights_only=True))
        log(f"resumed from {run.resume_from} (step {step})")
    drop_metrics_after(metrics_path, step)
    acceptance_before = None
    if step == 0:
        acceptance_before = offline_acceptance(head, held, steps=config.draft_steps)
        log(f"held-out acceptance before training: {acceptance_before}")
    weights = [config.step_weight_decay ** k for k in range(config.draft_steps)]
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
            seq = train[_draw(step * config.per_device_train_batch_size + j, len(train), config.seed)]
            loss, z, per_step = sequence_loss(head, seq, steps=config.draft_steps, weights=weights)
            batch_loss, batch_z = batch_loss + loss, batch_z + z
            batch_stats.append(per_step)
            tick_tokens += int(seq.tokens.shape[0])
        if batch_z:
            (batch_loss / batch_z).backward()
            grad_norm = float(torch.nn.utils.clip_grad_norm_(head.parameters(), config.max_grad_norm))
            optimizer.step()
        else:
            grad_norm = 0.0
        step += 1
        window.extend(batch_stats)
        window_loss += float(batch_loss)
        window_z += batch_z
        if step % config.logging_steps == 0 or step == last_steps:
            now = time.perf_counter()
            row: dict[str, Any] = {"stage": "mtp", "step": step,
                                   "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()),
                                   "loss": round(window_loss / window_z, 5) if window_z else None,
                                   "learning_rate": optimizer.param_groups[0]["lr"], "grad_norm": round(grad_norm, 5),
                                   "tokens_per_s": round(tick_tokens / max(now - tick, 1e-9), 2)}
            for k in range(config.draft_steps):
                n = sum(s[k]["n"] for s in window)
                if n:
                    row[f"loss_step_{k + 1}"] = round(sum(s[k]["ce"] for s in window) / n, 5)
                    row[f"accuracy_step_{k + 1}"] = round(sum(s[k]["correct"] for s in window) / n, 5)
            with metrics_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(row, sort_keys=True) + "\n")
            log(f"step {step}/{last_steps}: loss {row['loss']} "
                + " ".join(f"acc{k + 1} {row.get(f'accuracy_step_{k + 1}')}" for k in range(config.draft_steps)))
            window, window_loss, window_z = [], 0.0, 0.0
            tick, tick_tokens = now, 0
        if step % config.save_steps == 0 or step == last_steps:
            _save_checkpoint(run.run_dir, step, head, optimizer, hf_model.config, config.save_total_limit)
    head.eval()
    after = offline_acceptance(head, held, steps=config.draft_steps)
    log(f"held-out acceptance after training: {after}")
    bundle = load_dir(resolve_harness_dir(config.harness))
    data = {"cases": len(records), "augmented": sum(bool(r["augmented"]) for r in records),
            "harnesses": sorted({r["harness"] for r in records}),
            "train_sequences": len(train), "held_out_sequences": len(held),
            "written_tokens": sum(int(s.written.sum()) for s in train)}
    card = {"stage": "mtp", "policy": str(run.model_dir), "policy_fingerprint": checkpoint_info(run.model_dir)["fingerprint"],
            "layout": config.layout, "draft_steps": config.draft_steps, "init_head": config.init_head or None,
            "hot_vocab_size": head.config.hot_vocab_size,
            "step_weight_decay": config.step_weight_decay, "steps": step, "data": data,
            "acceptance_held_out": after, "acceptance_held_out_before": acceptance_before,
            "rollout_wall_time_s": round(rollout_s, 1), "wall_time_s": round(time.perf_counter() - started, 1)}
    final = head.save(run.final_dir, policy_config=hf_model.config, card=card)
    ModelCard(stage="mtp", base_model=base_model_of(run.model_dir), parent_checkpoint=str(run.model_dir), data=data,
              harness_name=bundle.name, harness_digest=bundle.digest, steps=step,
              wall_time_s=time.perf_counter() - run.started, trainer="training.mtp_trainer (plain torch, AdamW)",
              extra={"head": str(final), "acceptance_held_out": after, "layout": config.layout,
                     "draft_steps": config.draft_steps}).write(run.run_dir)
    return final
