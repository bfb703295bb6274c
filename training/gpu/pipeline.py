"""One prepared GPU run: HAT (randomized HSA-SFT -> General OPD -> HSA-RL) and the Fixed-Harness
pipeline on the same budget, then the robustness check of each, in about 10 minutes of one H100.

    python -m training.gpu --out runs/gpu            # on the device (bf16, padding-free packing)
    python -m training.gpu --out /tmp/smoke --smoke  # the same code on CPU with the tiny model

What it runs, in order (each stage resumable, through ``training.pipeline.run_pipeline``, so a
second call after a cut goes on where the first stopped):

1. ``hat``: HSA-SFT on domain-randomized states (``hsa_mode: randomized``, two reseeded data
   epochs in curriculum order, recovery trajectories), packed without padding
   (``padding_free``), bf16, ``per_device_train_batch_size`` 32; then General OPD (reverse KL to
   the frozen base); then HSA-RL (GRPO, rollouts under fresh variants from a pool of 64 whose seeds
   no SFT state used, rewarded by the programmatic judge's dimensions).
2. ``fixed``: the same three stages with Fixed-Harness SFT (``hsa_variants: 0``) and RL under the
   original Harness only (``augmented_fraction: 0``), with the same steps and batch sizes.
3. The robustness check (``training.robustness``) of both final models and of the shipped
   adapter, greedy round 1, with a transformers policy on the GPU (``CudaPolicy``).

It prints each stage's tokens/s (the trainer's own ``tokens_per_s`` rows in ``metrics.jsonl``) and
MFU = 6 x parameters x tokens/s / the chip's dense bf16 peak (``PEAK_FLOPS``; "n/a" on CPU), and
writes ``OUT/summary.json`` and ``OUT/summary.md``. What the device needs: torch, transformers,
peft, accelerate (in its image) and TRL: ``pip install --no-index wheels/trl-*.whl`` runs first
when ``import trl`` fails and a wheel was carried in ``wheels/``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path
from typing import Any

from harness.policies.base import Policy, PolicyOutput

#: dense bf16 peak FLOP/s by device-name fragment (the vendor's figures, no sparsity)
PEAK_FLOPS = {"H200": 989e12, "H100": 989e12, "A100": 312e12, "L40S": 362e12, "A10G": 125e12}


def plans(*, out: Path, smoke: bool) -> dict[str, Any]:
    """The HAT and Fixed pipelines (``PipelineConfig``), the same budget for both."""
    from training.opd_config import OPDStageConfig
    from training.pipeline_config import PipelineConfig
    from training.rl_config import RLStageConfig
    from training.sft_config import SFTStageConfig

    if smoke:
        model = "tiny"
        sft = SFTStageConfig(
            max_cases=4,
            max_steps=2,
            per_device_train_batch_size=2,
            hsa_group_size=2,
            save_steps=2,
            learning_rate=1e-3,
            max_length=4096,
            padding_free=True,
            shared_prefix=False,
        )
        opd = OPDStageConfig(
            max_steps=1,
            max_prompts=2,
            max_completion_length=8,
            per_device_train_batch_size=2,
            save_steps=1,
        )
        rl = RLStageConfig(
            max_steps=1,
            max_cases=2,
            num_generations=2,
            max_new_tokens=8,
            per_device_train_batch_size=2,
            variant_pool_size=2,
            save_steps=1,
        )
    else:
        model = "local"
        sft = SFTStageConfig(
            max_cases=678,
            max_steps=240,
            per_device_train_batch_size=32,
            hsa_group_size=2,
            hsa_variants=4,  # each case under 4 fresh states an epoch: ~1,350 states an epoch
            hsa_epochs=2,
            hsa_curriculum=[1, 5],
            save_steps=120,
            save_total_limit=1,
            learning_rate=3e-4,
            warmup_steps=10,
            lora_rank=16,
            lora_alpha=32,
            lora_target_modules=["all-linear"],
            padding_free=True,
            shared_prefix=False,
        )
        opd = OPDStageConfig(
            max_steps=30,
            max_prompts=400,
            per_device_train_batch_size=32,
            max_completion_length=96,
            save_steps=30,
            learning_rate=1e-5,
        )
        rl = RLStageConfig(
            max_steps=20,
            max_cases=200,
            num_generations=8,
            max_new_tokens=96,
            per_device_train_batch_size=32,
            variant_pool_size=64,
            augmented_fraction=0.8,
            save_steps=20,
            trajectory_budget_s=600,
        )
    hat = PipelineConfig(
        model=model,
        output_dir=str(out / "hat"),
        sft=dataclasses.replace(sft, hsa_mode="randomized"),
        opd=opd,
        rl=rl,
    )
    fixed = PipelineConfig(
        model=model,
        output_dir=str(out / "fixed"),
        sft=dataclasses.replace(sft, hsa_variants=0, hsa_mode="pool"),
        opd=opd,
        rl=dataclasses.replace(rl, augmented_fraction=0.0),
    )
    return {"hat": hat, "fixed": fixed}


class CudaPolicy(Policy):
    """Greedy generation with transformers on the GPU (CPU without one), for the checks: the
    project's local routes are CPU engines. ``model`` is anything ``resolve_checkpoint`` takes."""

    def __init__(self, model: str, *, max_new_tokens: int = 128) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from harness.checkpoints import resolve_checkpoint

        folder = str(resolve_checkpoint(model))
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype).to(self.device)
        self.model.eval()
        self.max_new_tokens = max_new_tokens
        self.name = f"cuda:{model}"

    def generate(self, messages, *, tools=None, settings=None) -> PolicyOutput:
        import torch

        started = time.perf_counter()
        text = self.tokenizer.apply_chat_template(
            [{"role": m["role"], "content": str(m.get("content") or "")} for m in messages],
            tokenize=False,
            add_generation_prompt=True,
        )
        ids = self.tokenizer(text, return_tensors="pt", add_special_tokens=False).to(self.device)
        limit = settings.max_new_tokens if settings else self.max_new_tokens
        with torch.no_grad():
            out = self.model.generate(**ids, max_new_tokens=limit, do_sample=False)
        new = out[0, ids["input_ids"].shape[1] :]
        return PolicyOutput(
            text=self.tokenizer.decode(new, skip_special_tokens=True),
            input_tokens=int(ids["input_ids"].shape[1]),
            output_tokens=int(new.shape[0]),
            latency_s=time.perf_counter() - started,
        )


def parameter_count(model: str) -> int:
    """Parameters of the model a stage trained (the base's, for an adapter)."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    from harness.checkpoints import resolve_checkpoint

    config = AutoConfig.from_pretrained(str(resolve_checkpoint(model)))
    with torch.device("meta"):
        skeleton = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in skeleton.parameters())


def peak_flops() -> tuple[str, float | None]:
    import torch

    if not torch.cuda.is_available():
        return "cpu", None
    name = torch.cuda.get_device_name(0)
    return name, next((v for k, v in PEAK_FLOPS.items() if k in name), None)


def throughput(run_dir: Path, params: int, peak: float | None) -> dict[str, Any]:
    """Mean tokens/s over the stage's logged steps and the MFU it means."""
    rows = []
    metrics = run_dir / "metrics.jsonl"
    if metrics.is_file():
        for line in metrics.read_text().splitlines():
            row = json.loads(line)
            if isinstance(row.get("tokens_per_s"), int | float):
                rows.append(float(row["tokens_per_s"]))
    rate = sum(rows) / len(rows) if rows else 0.0
    mfu = 6 * params * rate / peak if peak else None
    return {
        "tokens_per_s": round(rate, 1),
        "mfu": round(mfu, 4) if mfu is not None else None,
        "logged_steps": len(rows),
    }


def run(*, out: Path, smoke: bool, check_cases: int, baseline: str) -> dict[str, Any]:
    from training.pipeline import run_pipeline, stage_dirs
    from training.robustness import RobustnessConfig, run_robustness

    out.mkdir(parents=True, exist_ok=True)
    device, peak = peak_flops()
    summary: dict[str, Any] = {"device": device, "smoke": smoke, "pipelines": {}, "checks": {}}
    finals: dict[str, str] = {}
    for name, config in plans(out=out, smoke=smoke).items():
        started = time.perf_counter()
        finals[name] = str(run_pipeline(config))
        params = parameter_count(config.model)
        summary["pipelines"][name] = {
            "wall_s": round(time.perf_counter() - started, 1),
            "final": finals[name],
            "parameters": params,
            "stages": {
                stage: throughput(folder, params, peak)
                for stage, folder in stage_dirs(config).items()
            },
        }
        print(f"[gpu] {name}: {json.dumps(summary['pipelines'][name]['stages'])}", flush=True)
    models = dict(finals)
    if baseline:
        models["shipped"] = baseline
    families = ["full"] if smoke else None
    for name, model in models.items():
        started = time.perf_counter()
        config = RobustnessConfig(
            model=model,
            policy="torch",
            out=str(out / "robustness" / name),
            cases=check_cases,
            seen="randomized" if name == "hat" else "pool",
            **({"families": families} if families else {}),
        )
        results = run_robustness(config, policy=CudaPolicy(model))
        summary["checks"][name] = {
            "wall_s": round(time.perf_counter() - started, 1),
            "summary": results["summary"],
        }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (out / "summary.md").write_text(summary_markdown(summary))
    print(summary_markdown(summary), flush=True)
    return summary


def summary_markdown(summary: dict[str, Any]) -> str:
    lines = [f"# GPU pipeline ({summary['device']}{', smoke' if summary['smoke'] else ''})", ""]
    lines += ["| pipeline | stage | tokens/s | MFU | wall (pipeline) |", "|---|---|---|---|---|"]
    for name, p in summary["pipelines"].items():
        for stage, t in p["stages"].items():
            mfu = f"{100 * t['mfu']:.1f}%" if t["mfu"] is not None else "n/a"
            lines.append(f"| {name} | {stage} | {t['tokens_per_s']} | {mfu} | {p['wall_s']} s |")
    lines += ["", "| model | family | first tool call seen | unseen | both seen | unseen |"]
    lines += ["|---|---|---|---|---|---|"]
    for name, check in summary["checks"].items():
        for family, cond in check["summary"].items():
            if family == "original":
                continue
            s, u = cond.get("seen", {}), cond.get("unseen", {})
            lines.append(
                f"| {name} | {family} | {s.get('tool', 0)}/{s.get('n', 0)} | "
                f"{u.get('tool', 0)}/{u.get('n', 0)} | {s.get('decision', 0)}/{s.get('n', 0)} | "
                f"{u.get('decision', 0)}/{u.get('n', 0)} |"
            )
    return "\n".join(lines) + "\n"


def ensure_trl() -> None:
    """Install the carried TRL wheel when the device image lacks TRL."""
    try:
        import trl  # noqa: F401
    except ImportError:
        import subprocess
        import sys

        wheels = sorted(Path("wheels").glob("trl-*.whl"))
        if not wheels:
            raise SystemExit(
                "TRL is missing: carry its wheel in wheels/ (docs/training.md)"
            ) from None
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", str(wheels[-1])],
            check=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m training.gpu", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--out", default="runs/gpu", help="folder for both pipelines and checks")
    parser.add_argument("--smoke", action="store_true", help="the tiny model, a step a stage")
    parser.add_argument("--check-cases", type=int, default=16, help="robustness check cases")
    parser.add_argument(
        "--baseline",
        default="models/demo-adapter",
        help="also check this model (the shipped adapter); empty: none",
    )
    args = parser.parse_args(argv)
    ensure_trl()
    run(
        out=Path(args.out),
        smoke=args.smoke,
        check_cases=1 if args.smoke and args.check_cases == 16 else args.check_cases,
        baseline="" if args.smoke and args.baseline == "models/demo-adapter" else args.baseline,
    )
    return 0
