"""What shared-prefix batches save on domain-randomized HSA data, against the pooled recipe.

    .venv/bin/python benchmarks/randomized_prefix_sharing.py --examples RANDOMIZED.jsonl \
        [--pool-examples POOL.jsonl] [--model local] [--batch 2,4,8,16,32]

Build the files with ``python -m training data`` (``--hsa-mode randomized`` and the pooled
default). Each file is packed once with the model's tokenizer (``training.conversations``) and,
per batch size, the batches ``PrefixGroupedSampler`` forms are measured: the tokens a batch's
common start keeps from being encoded again (``training.shared_prefix.prefix_saving``), as a share
of all packed tokens. A randomized state serves ``hsa_group_size`` cases, so at batch sizes above
the group's sequences a batch mixes states and shares less than the pool's batches do.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def measure(path: str, *, model: str, batches: list[int]) -> list[dict]:
    from transformers import AutoTokenizer

    from harness.checkpoints import resolve_checkpoint
    from training.sft_trainer import read_examples, sft_dataset
    from training.shared_prefix import prefix_saving

    examples = read_examples(path)
    tokenizer = AutoTokenizer.from_pretrained(str(resolve_checkpoint(model)))
    phases: list[int] = []
    dataset, packing = sft_dataset(examples, tokenizer=tokenizer, phases=phases)
    ids = dataset["input_ids"]
    states = len({json.dumps((e.get("meta") or {}).get("harness_digest")) for e in examples})
    rows = []
    for batch in batches:
        rows.append(
            {
                "file": path,
                "states": states,
                **prefix_saving(ids, batch_size=batch, phases=phases),
                "per_turn_tokens": packing["per_turn_tokens"],
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", required=True, help="randomized HSA examples JSONL")
    parser.add_argument("--pool-examples", default="", help="pooled HSA examples JSONL")
    parser.add_argument("--model", default="local", help="whose tokenizer packs the sequences")
    parser.add_argument("--batch", default="2,4,8,16,32", help="batch sizes, comma-separated")
    args = parser.parse_args()
    batches = [int(b) for b in args.batch.split(",")]
    started = time.perf_counter()
    rows = measure(args.examples, model=args.model, batches=batches)
    if args.pool_examples:
        rows += measure(args.pool_examples, model=args.model, batches=batches)
    print(
        "| data | states | sequences | packed tokens | batch | batches sharing "
        "| tokens not re-encoded | tokens saved |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {Path(r['file']).name} | {r['states']} | {r['sequences']} | {r['tokens']:,} "
            f"| {r['batch_size']} | {r['batches_sharing']} of {r['batches']} "
            f"| {r['tokens_not_reencoded']:,} | {r['tokens_saved_pct']}% |"
        )
    print(f"({time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
