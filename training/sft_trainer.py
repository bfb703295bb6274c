"""Stage 1: HSA-SFT with TRL's ``SFTTrainer``, loss on the model's own turns only.

Examples are per-turn prompt/completion pairs (see ``training.trajectory_data``):
the prompt is the exact message list the runtime sent to the model for that turn,
the completion is what the model wrote. The loss is on the completion tokens only
(``completion_only_loss``), end-of-turn token included, rendered with the
model's own chat template (the one the runtime serves with). With ``pack_turns``
(the default) the turns of one trajectory are trained as one sequence
(``training.conversations``); otherwise ``SFTTrainer`` renders each pair itself.
Fixed-Harness SFT is the same stage with ``hsa_variants: 0``. With ``shared_prefix`` (the
default) a batch holds sequences of one Harness state and their shared system prompt is encoded
once (``training.shared_prefix``): the same loss and gradients, fewer tokens through the model.

With ``eval_fraction`` a share of the cases is held out (``split_eval``: whole cases, so
no turn of a held-out trajectory is trained) and built into a dataset the way the
training set is; the trainer logs its ``eval_loss`` every ``eval_steps`` (0: at each
save) into metrics.jsonl, and the model card records the split and the best eval_loss.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

from trl import SFTTrainer

from harness.jsonl import jsonl_records
from training import cpu_scoring
from training.sft_config import SFTStageConfig
from training.shared_prefix import PrefixGroupedSampler, SharedPrefixMixin
from training.stage_common import resolve_harness_dir, start_stage


class HarnessSFTTrainer(SharedPrefixMixin, SFTTrainer):
    """SFTTrainer whose batches are formed by Harness state and encode their shared prefix once
    (``training.shared_prefix``; the same loss and gradients as the plain path)."""

    def __init__(
        self, *args, shared_prefix: bool = False, phases: list[int] | None = None, **kwargs
    ) -> None:
        super().__init__(*args, **kwargs)
        self.use_shared_prefix = shared_prefix
        # randomized HSA's data epochs (curriculum order): taken in order, whatever the batches
        self.phases = phases if phases and len(set(phases)) > 1 else None

    def _get_train_sampler(self, train_dataset=None):
        if not self.use_shared_prefix and self.phases is None:
            return super()._get_train_sampler(train_dataset)
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        return PrefixGroupedSampler(
            dataset["input_ids"],
            batch_size=self.args.per_device_train_batch_size,
            seed=self.args.seed,
            phases=self.phases,
            group=self.use_shared_prefix,
        )

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        with self.shared_prefix_scoring(model):
            return super().compute_loss(
                model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
            )


def read_examples(path: str | Path) -> list[dict[str, Any]]:
    """Read an examples JSONL; every line needs chat-message ``prompt`` and ``completion`` lists."""
    path = Path(path)
    examples = []
    for number, row in jsonl_records(path):
        if not (
            isinstance(row, dict)
            and isinstance(row.get("prompt"), list)
            and isinstance(row.get("completion"), list)
        ):
            raise ValueError(
                f"{path}:{number}: an example needs 'prompt' and 'completion' lists of "
                "chat messages ({role, content})"
            )
        examples.append(row)
    if not examples:
        raise ValueError(f"{path}: no examples")
    return examples


def sft_dataset(
    examples: list[dict[str, Any]],
    *,
    tokenizer=None,
    phases: list[int] | None = None,
    max_length: int | None = None,
) -> tuple[Any, dict[str, int]]:
    """A datasets.Dataset of just the columns SFTTrainer reads (metadata stays in the JSONL), and
    packing facts. With ``tokenizer`` the turns of each trajectory are packed into one tokenized
    sequence; ``phases`` (a list to fill) receives each sequence's randomized-HSA data epoch."""
    from datasets import Dataset

    if tokenizer is None:
        rows = [{"prompt": ex["prompt"], "completion": ex["completion"]} for ex in examples]
        return Dataset.from_list(rows), {}
    from training.conversations import pack

    packed, facts = pack(tokenizer, examples)
    if phases is not None:
        phases[:] = [int(r.get("phase", 0)) for r in packed]
    cut = max_length or None  # ``max_length``: cut here, keeping the start, as TRL would
    if cut:
        facts["cut_sequences"] = sum(1 for r in packed if len(r["input_ids"]) > cut)
    return Dataset.from_list(
        [
            {"input_ids": r["input_ids"][:cut], "completion_mask": r["completion_mask"][:cut]}
            for r in packed
        ]
    ), facts


def measure_prefix_sharing(examples: list[dict[str, Any]], *, config: SFTStageConfig) -> dict:
    """Pack ``examples`` with the model's tokenizer and measure what shared-prefix batches of
    ``per_device_train_batch_size`` save on them (``training.shared_prefix.prefix_saving``)."""
    from transformers import AutoTokenizer

    from harness.checkpoints import resolve_checkpoint
    from training.shared_prefix import prefix_saving

    tokenizer = AutoTokenizer.from_pretrained(str(resolve_checkpoint(config.model)))
    phases: list[int] = []
    dataset, packing = sft_dataset(examples, tokenizer=tokenizer, phases=phases)
    return {
        **prefix_saving(
            dataset["input_ids"],
            batch_size=config.per_device_train_batch_size,
            seed=config.seed,
            phases=phases,
        ),
        "packed": packing,
    }


def file_sha256(path: str | Path) -> str:
    """The examples file's digest, for the model card: the data a checkpoint saw, byte for byte."""
    import hashlib

    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _case_key(index: int, example: dict[str, Any]) -> tuple:
    meta = example.get("meta") or {}
    if meta.get("case_id") not in (None, ""):
        return ("case", str(meta["case_id"]))
    return ("example", index)  # not from a recorded case: an example is its own unit


def split_eval(
    examples: list[dict[str, Any]], fraction: float, *, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(train, held-out, facts): ``fraction`` of the cases (``meta.case_id``; an example without one
    is a unit of its own) held out whole, chosen with ``seed``, at least one on each side; order
    kept.

    A case's trajectories under the original Harness and its variants, and all their turns, land on
    the same side, so the evaluation loss is on cases the model never trained on."""
    groups: dict[tuple, list[int]] = {}
    for index, example in enumerate(examples):
        groups.setdefault(_case_key(index, example), []).append(index)
    if len(groups) < 2:
        raise ValueError(
            f"eval_fraction: holding out a share of the cases needs at least 2 cases, "
            f"the examples have {len(groups)}"
        )
    n_eval = min(len(groups) - 1, max(1, round(fraction * len(groups))))
    keys = list(groups)
    random.Random(seed).shuffle(keys)
    held = {i for key in keys[:n_eval] for i in groups[key]}
    train = [ex for i, ex in enumerate(examples) if i not in held]
    held_out = [ex for i, ex in enumerate(examples) if i in held]
    return (
        train,
        held_out,
        {
            "eval_fraction": fraction,
            "eval_cases": n_eval,
            "eval_examples": len(held_out),
            "train_cases": len(groups) - n_eval,
            "train_examples": len(train),
        },
    )


def best_eval(log_history: list[dict[str, Any]]) -> dict[str, Any]:
    """The lowest logged ``eval_loss`` and its step ({} when none was logged)."""
    evals = [
        (row["eval_loss"], row["step"])
        for row in log_history
        if isinstance(row.get("eval_loss"), int | float)
        and math.isfinite(row["eval_loss"])
        and isinstance(row.get("step"), int)
    ]
    if not evals:
        return {}
    loss, step = min(evals, key=lambda e: (e[0], e[1]))
    return {"best_eval_loss": loss, "best_eval_step": step, "evaluations": len(evals)}


def build_sft_args(config: SFTStageConfig, run, **overrides):
    from trl import SFTConfig

    args = run.common_trainer_args(config)
    args.update(
        max_length=config.max_length,
        completion_only_loss=True,
        assistant_only_loss=False,
        packing=False,
        dataset_num_proc=None,
    )
    if config.padding_free:
        # one row per batch, no padding: position ids restart at every sequence (flash attention
        # keeps the sequences apart); the shared-prefix path needs padded rows, so it is off. TRL
        # does not cut padding-free rows, so run_sft cuts them at max_length (keeping the start)
        args.update(padding_free=True, max_length=None)
    if config.eval_fraction:
        # the held-out loss only: no predictions kept, no best-model reload, no early stopping
        args.update(
            eval_strategy="steps",
            eval_steps=config.eval_steps or config.save_steps,
            per_device_eval_batch_size=config.per_device_train_batch_size,
            prediction_loss_only=True,
            load_best_model_at_end=False,
            eval_on_start=False,
        )
    args.update(overrides)
    return SFTConfig(**args)


def run_sft(config: SFTStageConfig, *, examples: list[dict[str, Any]] | None = None) -> Path:
    """Train stage 1 and return the final model folder."""
    from transformers import AutoTokenizer

    cpu_scoring.enable()
    run = start_stage(config, stage="sft")
    harness_dir = resolve_harness_dir(config.harness)
    data_facts: dict[str, Any]
    if examples is None and config.examples:
        examples = read_examples(config.examples)
        data_facts = {
            "examples_file": config.examples,
            "examples_sha256": file_sha256(config.examples),
        }
    elif examples is None:
        from training.trajectory_data import build_sft_examples, write_examples

        examples, report = build_sft_examples(config=config, harness_dir=harness_dir)
        write_examples(examples, run.run_dir / "examples.jsonl")
        (run.run_dir / "data_report.json").write_text(
            json.dumps(report, indent=2) + "\n", encoding="utf-8"
        )
        data_facts = {
            "examples_file": str(run.run_dir / "examples.jsonl"),
            "examples_sha256": file_sha256(run.run_dir / "examples.jsonl"),
            **report,
        }
    else:
        data_facts = {"examples": "given in memory"}
    data_facts.setdefault("n_examples", len(examples))
    data_facts["hsa_variants"] = config.hsa_variants
    run.check_data(data_facts)
    tokenizer = AutoTokenizer.from_pretrained(run.model_dir)
    packer = tokenizer if config.pack_turns else None
    eval_dataset = None
    if config.eval_fraction:
        examples, held_out, split = split_eval(examples, config.eval_fraction, seed=config.seed)
        eval_dataset, eval_packing = sft_dataset(held_out, tokenizer=packer)
        data_facts["eval_split"] = {
            **split,
            "eval_steps": config.eval_steps or config.save_steps,
            **({"eval_packed": eval_packing} if eval_packing else {}),
        }
    phases: list[int] = []
    dataset, packing = sft_dataset(
        examples,
        tokenizer=packer,
        phases=phases,
        max_length=config.max_length if config.padding_free else None,
    )
    data_facts["packed"] = packing
    if packer is not None:
        from training.shared_prefix import prefix_saving

        data_facts["prefix_sharing"] = prefix_saving(
            dataset["input_ids"],
            batch_size=config.per_device_train_batch_size,
            seed=config.seed,
            phases=phases,
        )
    trainer = HarnessSFTTrainer(
        model=str(run.model_dir),
        args=build_sft_args(config, run),
        train_dataset=dataset,
        eval_dataset=eval_dataset,
        processing_class=tokenizer,
        callbacks=run.callbacks(),
        peft_config=config.peft_config(),
        shared_prefix=config.shared_prefix and not config.padding_free,
        phases=phases,
    )
    run.train(trainer)
    final = run.finish(
        trainer,
        tokenizer,
        config=config,
        harness_dir=harness_dir,
        data=data_facts,
        trainer_name="trl.SFTTrainer",
        extra={
            "fixed_harness": config.hsa_variants == 0,
            "shared_prefix": config.shared_prefix
            and not config.padding_free
            and trainer.shared_prefix_stats.to_dict(),
            **best_eval(trainer.state.log_history),
        },
    )
    if config.evaluate_after:
        from training.self_eval import evaluate_run

        evaluate_run(
            run_dir=run.run_dir, harness_dir=harness_dir, cases=config.eval_cases, seed=config.seed
        )
    return final
