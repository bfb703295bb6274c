"""Stage 1: HSA-SFT with TRL's ``SFTTrainer``, loss on the model's own turns only.

Examples are per-turn prompt/completion pairs (see ``training.trajectory_data``):
the prompt is the exact message list the runtime sent to the model for that turn,
the completion is what the model wrote. The loss is on the completion tokens only
(``completion_only_loss``), end-of-turn token included, rendered with the
model's own chat template (the one the runtime serves with). With ``pack_turns``
(the default) the turns of one trajectory are trained as one sequence
(``training.conversations``); otherwise ``SFTTrainer`` renders each pair itself.
Fixed-Harness SFT is the same stage with ``hsa_variants: 0``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.jsonl import jsonl_records
from training.sft_config import SFTStageConfig
from training.stage_common import resolve_harness_dir, start_stage


def read_examples(path: str | Path) -> list[dict[str, Any]]:
    """Read an examples JSONL; every line needs chat-message ``prompt`` and ``completion`` lists."""
    path = Path(path)
    examples = []
    for number, row in jsonl_records(path):
        if not (isinstance(row, dict) and isinstance(row.get("prompt"), list)
                and isinstance(row.get("completion"), list)):
            raise ValueError(f"{path}:{number}: an example needs 'prompt' and 'completion' lists of "
                             "chat messages ({role, content})")
        examples.append(row)
    if not examples:
        raise ValueError(f"{path}: no examples")
    return examples


def sft_dataset(examples: list[dict[str, Any]], *, tokenizer=None) -> tuple[Any, dict[str, int]]:
    """A datasets.Dataset of just the columns SFTTrainer reads (metadata stays in the JSONL), and
    packing facts. With ``tokenizer`` the turns of each trajectory are packed into one tokenized sequence."""
    from datasets import Dataset

    if tokenizer is None:
        rows = [{"prompt": ex["prompt"], "completion": ex["completion"]} for ex in examples]
        return Dataset.from_list(rows), {}
    from training.conversations import pack

    packed, facts = pack(tokenizer, examples)
    return Dataset.from_list([{"input_ids": r["input_ids"], "completion_mask": r["completion_mask"]}
                              for r in packed]), facts


def build_sft_args(config: SFTStageConfig, run, **overrides):
    from trl import SFTConfig

    args = run.common_trainer_args(config)
    args.update(max_length=config.max_length, completion_only_loss=True, assistant_only_loss=False,
                packing=False, dataset_num_proc=None)
    args.update(overrides)
    return SFTConfig(**args)


def run_sft(config: SFTStageConfig, *, examples: list[dict[str, Any]] | None = None) -> Path:
    """Train stage 1 and return the final model folder."""
    from transformers import AutoTokenizer
    from trl import SFTTrainer

    run = start_stage(config, stage="sft")
    harness_dir = resolve_harness_dir(config.harness)
    data_facts: dict[str, Any]
    if examples is None and config.examples:
        examples = read_examples(config.examples)
        data_facts = {"examples_file": config.examples}
    elif examples is None:
        from training.trajectory_data import build_sft_examples, write_examples

        examples, report = build_sft_examples(config=config, harness_dir=harness_dir)
        write_examples(examples, run.run_dir / "examples.jsonl")
        (run.run_dir / "data_report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        data_facts = {"examples_file": str(run.run_dir / "examples.jsonl"), **report}
    else:
        data_facts = {"examples": "given in memory"}
    data_facts.setdefault("n_examples", len(examples))
    data_facts["hsa_variants"] = config.hsa_variants
    tokenizer = AutoTokenizer.from_pretrained(run.model_dir)
    dataset, packing = sft_dataset(examples, tokenizer=tokenizer if config.pack_turns else None)
    data_facts["packed"] = packing
    trainer = SFTTrainer(model=str(run.model_dir), args=build_sft_args(config, run),
                         train_dataset=dataset, processing_class=tokenizer,
                         callbacks=run.callbacks())
    run.train(trainer)
    final = run.finish(trainer, tokenizer, config=config, harness_dir=harness_dir, data=data_facts,
                       trainer_name="trl.SFTTrainer",
                       extra={"fixed_harness": config.hsa_variants == 0})
    if config.evaluate_after:
        from training.self_eval import evaluate_run

        evaluate_run(run_dir=run.run_dir, harness_dir=harness_dir, cases=config.eval_cases, seed=config.seed)
    return final
