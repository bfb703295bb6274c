"""The CPU-scale ablation of Table 4: Base, Fixed-Harness SFT, HSA-SFT, + General OPD, + HSA-RL.

``python -m training ablation --preset cpu-small`` trains the four checkpoints
on the default model (each SFT cell in two phases, the demo checkpoint's
recipe) and scores all five on held-out Live-Stream QA (T1) and
Harness-Variant QA (T2) subsets, Prompt Robustness and an IFEval subset, then
writes ``table.md`` / ``table.json`` with paired-bootstrap intervals against the
Base model and for the two target comparisons (HSA-SFT vs Fixed-Harness SFT on
T2; the full pipeline vs Base on IFEval).

It is a list of steps run in an order that answers the main question first
(both SFT variants, then their T2 scores). Every step is resumable: training
resumes from its last checkpoint, evaluation from its per-item JSONL, and a
finished step is skipped. ``steps.json`` records each step's wall time; the
table is rewritten after every step, with "pending" where nothing is scored yet.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.opd_config import OPDStageConfig
from training.rl_config import RLStageConfig
from training.runs import final_model_dir, is_finished, update_json
from training.sft_config import SFTStageConfig

MODELS = ("base", "fixed_sft", "hsa_sft", "opd", "rl")
LABELS = {"base": "Base", "fixed_sft": "Fixed-Harness SFT", "hsa_sft": "HSA-SFT", "opd": "+ General OPD",
          "rl": "+ HSA-RL"}
SET_LABELS = {"live_qa": "T1 Live-Stream QA AVG", "variant_qa": "T2 Harness-Variant QA AVG",
              "prompt_robustness": "Prompt Robustness AVG", "ifeval": "IFE-P (strict)"}
# The judge's step-level dimensions on T2: finer than AVG, they show whether a model picks the
# variant's skills and tools before it has learned to finish a request.
STEP_DIMENSIONS = {"skill_selection": "Skill Selection", "tool_rationality": "Tool Rationality",
                   "renamed_tool_called": "Renamed Tool Called"}
# How a request ended (the runtime's trajectory outcome): a reply, the Harness's fallback reply, a
# hook's or exhausted retries' suppression (a variant may set on_exhausted: suppress), or a silent route.
OUTCOMES = ("replied", "fallback", "suppressed", "silent", "error")
OUTCOME_SETS = ("live_qa", "variant_qa")
# "Renamed Tool Called": of the T2 cases whose gold needs a tool that the case's variant renamed, the
# share in which the model called that tool by its new name, whatever the arguments (the judge's
# missing_tool_call code is absent). It is the measure of the planning experiment: a Fixed-
# Harness model keeps writing the memorised name.


@dataclass
class AblationConfig:
    """Sizes of one ablation run (a preset fills them; flags override)."""

    model: str = field(default="local", metadata={"help": "Base model ('local' = SmolLM2-135M-Instruct)."})
    output_dir: str = field(default="runs/ablation-cpu-small", metadata={"help": "Ablation folder."})
    harness: str = field(default="demo", metadata={"help": "Harness folder."})
    train_cases: int = field(default=200, metadata={"help": "Training cases for SFT data and RL tasks."})
    hsa_variants: int = field(default=3, metadata={"help": "HSA variants per case for HSA-SFT."})
    sft_steps: int = field(default=24, metadata={"help": "Optimizer steps of each SFT run."})
    sft_batch: int = field(default=2, metadata={"help": "Examples per SFT step."})
    sft_lr: float = field(default=1e-4, metadata={"help": "SFT learning rate."})
    sft_pack: bool = field(default=False, metadata={"help": "Pack each trajectory's turns in the first SFT phase."})
    sft2_steps: int = field(default=20, metadata={"help": (
        "Steps of a second SFT phase on the same examples, turns packed, from the first phase's model "
        "(the demo checkpoint's recipe, examples/training/demo-sft-2.yaml). 0 = one phase.")})
    sft2_schedule_steps: int = field(default=60, metadata={"help": (
        "Length of the second phase's linear learning-rate schedule; it stops after sft2_steps.")})
    sft2_lr: float = field(default=2e-4, metadata={"help": "Peak learning rate of the second SFT phase."})
    opd_steps: int = field(default=16, metadata={"help": "Optimizer steps of General OPD."})
    rl_steps: int = field(default=6, metadata={"help": "Optimizer steps of HSA-RL (4 rollouts each)."})
    eval_cases: int = field(default=100, metadata={"help": "Held-out cases in each of T1 and T2."})
    eval_prompt_robustness: int = field(default=50, metadata={"help": "Prompt Robustness cases."})
    eval_ifeval: int = field(default=50, metadata={"help": "IFEval prompts (the first N)."})
    max_new_tokens: int = field(default=64, metadata={"help": "Tokens per model call at evaluation (a 220-character "
                                                                   "reply or a tool call fits in 64)."})
    resamples: int = field(default=10_000, metadata={"help": "Bootstrap resamples."})

    @classmethod
    def help_texts(cls) -> dict[str, str]:
        return {f.name: f.metadata.get("help", "") for f in dataclasses.fields(cls)}

    def check(self) -> str:
        """The first problem with the sizes, as ``field: what is wrong``, or ''."""
        for name in ("train_cases", "sft_steps", "sft_batch", "opd_steps", "rl_steps", "eval_cases",
                     "eval_prompt_robustness", "eval_ifeval", "max_new_tokens"):
            if getattr(self, name) < 1:
                return f"{name}: must be at least 1, got {getattr(self, name)}"
        for name in ("hsa_variants", "sft2_steps"):
            if getattr(self, name) < 0:
                return f"{name}: must be 0 or more, got {getattr(self, name)}"
        if self.sft2_steps and self.sft2_schedule_steps < self.sft2_steps:
            return (f"sft2_schedule_steps: the schedule ({self.sft2_schedule_steps}) must be at least "
                    f"sft2_steps ({self.sft2_steps}) long")
        for name in ("sft_lr", "sft2_lr"):
            if not getattr(self, name) > 0:
                return f"{name}: must be above 0, got {getattr(self, name)}"
        if self.resamples < 100:
            return f"resamples: at least 100 bootstrap resamples, got {self.resamples}"
        return ""


PRESETS: dict[str, AblationConfig] = {
    "cpu-small": AblationConfig(),
    # a smoke run of the whole machinery on the tiny model (minutes, numbers meaningless)
    "tiny-smoke": AblationConfig(model="tiny", output_dir="runs/ablation-tiny-smoke", train_cases=8,
                                 hsa_variants=1, sft_steps=2, sft2_steps=1, sft2_schedule_steps=2, opd_steps=2,
                                 rl_steps=1, eval_cases=3, eval_prompt_robustness=2, eval_ifeval=2, max_new_tokens=8, resamples=200),
}


def item_scores(eval_dir: str | Path, set_name: str, *,
                rows: dict[str, dict[str, Any]] | None = None) -> dict[str, float] | None:
    """Per-item scores (item id -> value in [0, 1]) of one set scored by ``python -m training eval``
    into ``eval_dir`` (None if that set is not there): a case's AVG on T1/T2, its rubric AVG on Prompt
    Robustness, and prompt-level strict pass/fail on IFEval (item id: the prompt's position).
    ``rows``: the set's per-item rows, if already read."""
    eval_dir = Path(eval_dir)
    if set_name == "ifeval":
        path = eval_dir / "summary.json"
        if not path.is_file():
            return None
        summary = json.loads(path.read_text(encoding="utf-8"))
        if "ifeval" not in summary:
            return None
        return {str(i): float(ok) for i, ok in enumerate(summary["ifeval"]["per_prompt"])}
    if rows is None:
        from training.self_eval import read_rows

        path = eval_dir / f"{set_name}.jsonl"
        if not path.is_file():
            return None
        rows = read_rows(path)
    key = "rubric_avg" if set_name == "prompt_robustness" else "avg"
    return {i: float(r[key] or 0.0) for i, r in rows.items()}


def paired_difference(base: dict[str, float], cand: dict[str, float], *, resamples: int) -> dict[str, float]:
    """Candidate minus base (x100) over the items both scored, paired item by item, with the
    paired-bootstrap 95% interval (``evaluation.stats.paired_bootstrap``)."""
    from evaluation.stats import paired_bootstrap

    ids = sorted(set(base) & set(cand))
    result = paired_bootstrap(baseline=[100 * base[i] for i in ids], candidate=[100 * cand[i] for i in ids],
                              resamples=resamples)
    return {"delta": result.delta, "low": result.low, "high": result.high,
            "p_delta_le_zero": result.p_delta_le_zero, "n": result.n}


class Ablation:
    def __init__(self, config: AblationConfig) -> None:
        self.config = config
        self.root = Path(config.output_dir)
        self.root.mkdir(parents=True, exist_ok=True)
        self.steps_path = self.root / "steps.json"
        self.steps: dict[str, Any] = json.loads(self.steps_path.read_text()) if self.steps_path.is_file() else {}
        self._renamed: dict[str, set[str]] | None = None  # built on first use by _renamed_tool_cases

    # -- models ------------------------------------------------------------------------------
    def model_dir(self, name: str) -> Path:
        if name == "base":
            from harness.checkpoints import resolve_checkpoint

            return resolve_checkpoint(self.config.model)
        if name in ("fixed_sft", "hsa_sft") and self.config.sft2_steps:
            return final_model_dir(self.root / f"{name}_2")
        return final_model_dir(self.root / name)

    def _common(self) -> dict[str, Any]:
        return {"harness": self.config.harness, "save_steps": 5, "save_total_limit": 1, "logging_steps": 1}

    def _sft(self, name: str, variants: int) -> None:
        from training.sft_trainer import run_sft

        c = self.config
        run_sft(SFTStageConfig(model=c.model, output_dir=str(self.root / name), max_cases=c.train_cases,
                               hsa_variants=variants, max_steps=c.sft_steps, per_device_train_batch_size=c.sft_batch,
                               learning_rate=c.sft_lr, max_length=4096, pack_turns=c.sft_pack, **self._common()))

    def _sft2(self, name: str) -> None:
        """The second SFT phase: the first phase's model and examples, turns packed, a higher learning
        rate on a longer schedule stopped early (at 135M parameters one phase either under-trains or
        collapses onto a memorised reply; docs/training.md)."""
        from training.sft_trainer import run_sft

        c = self.config
        first = self.root / name
        run_sft(SFTStageConfig(model=str(final_model_dir(first)), examples=str(first / "examples.jsonl"),
                               output_dir=str(self.root / f"{name}_2"), hsa_variants=0 if name == "fixed_sft"
                               else c.hsa_variants, pack_turns=True, max_steps=c.sft2_schedule_steps,
                               stop_after_steps=c.sft2_steps, per_device_train_batch_size=c.sft_batch,
                               learning_rate=c.sft2_lr, max_length=4096, seed=1, gradient_checkpointing=True,
                               **{**self._common(), "save_steps": c.sft2_steps}))

    def _opd(self) -> None:
        from training.opd_trainer import run_opd

        c = self.config
        run_opd(OPDStageConfig(model=str(self.model_dir("hsa_sft")), output_dir=str(self.root / "opd"),
                               max_steps=c.opd_steps, per_device_train_batch_size=2, max_completion_length=64,
                               **self._common()))

    def _rl(self) -> None:
        from training.rl_trainer import run_rl

        c = self.config
        run_rl(RLStageConfig(model=str(self.model_dir("opd")), output_dir=str(self.root / "rl"),
                             max_cases=c.train_cases, max_steps=c.rl_steps, num_generations=4,
                             per_device_train_batch_size=4, max_new_tokens=min(64, c.max_new_tokens), top_p=1.0,
                             trajectory_budget_s=120.0, gradient_checkpointing=True,
                             **{**self._common(), "save_steps": 1}))

    # -- steps -------------------------------------------------------------------------------
    def plan(self) -> list[tuple[str, Any]]:
        """Training and scoring steps, ordered so that both targets are answered as early as possible:
        the two SFT runs and their T2 scores, Base's IFEval, then OPD and RL and the full pipeline's
        IFEval; the remaining cells of the table after that."""
        def ev(model: str, set_name: str) -> tuple[str, Any]:
            return f"eval:{model}:{set_name}", self._eval_step(model, set_name)

        return [
            ("train:fixed_sft", lambda: self._sft("fixed_sft", 0)),
            ("train:hsa_sft", lambda: self._sft("hsa_sft", self.config.hsa_variants)),
            *([("train:fixed_sft_2", lambda: self._sft2("fixed_sft")),
               ("train:hsa_sft_2", lambda: self._sft2("hsa_sft"))] if self.config.sft2_steps else []),
            ev("fixed_sft", "variant_qa"), ev("hsa_sft", "variant_qa"),
            ev("base", "ifeval"),
            ("train:opd", self._opd), ("train:rl", self._rl),
            ev("rl", "ifeval"),
            ev("base", "variant_qa"), ev("opd", "variant_qa"), ev("rl", "variant_qa"),
            *[ev(m, "live_qa") for m in ("base", "fixed_sft", "hsa_sft", "opd", "rl")],
            *[ev(m, "ifeval") for m in ("fixed_sft", "hsa_sft", "opd")],
            *[ev(m, "prompt_robustness") for m in MODELS],
        ]

    def _eval_step(self, model: str, set_name: str):
        def run() -> None:
            from training.self_eval import evaluate_model
            from training.stage_common import resolve_harness_dir

            c = self.config
            evaluate_model(model_dir=self.model_dir(model), out_dir=self.root / "eval" / model,
                           harness_dir=resolve_harness_dir(c.harness), sets=(set_name,), n_cases=c.eval_cases,
                           n_prompt_robustness=c.eval_prompt_robustness, n_ifeval=c.eval_ifeval,
                           max_new_tokens=c.max_new_tokens)
        return run

    def _step_done(self, name: str) -> bool:
        if name.startswith("train:"):
            return is_finished(self.root / name.split(":", 1)[1])
        return bool(self.steps.get(name, {}).get("done"))

    def run(self, *, only_table: bool = False, only_steps: tuple[str, ...] = ()) -> dict[str, Any]:
        """Run every step not yet done, in plan order; ``only_steps`` limits it to the steps named (two
        processes can then run independent steps side by side, e.g. two evaluations on two cores)."""
        plan = self.plan()
        unknown = sorted(set(only_steps) - {name for name, _ in plan})
        if unknown:
            raise ValueError(f"unknown ablation step(s) {', '.join(unknown)}; valid: "
                             + ", ".join(name for name, _ in plan))
        (self.root / "ablation_config.json").write_text(
            json.dumps(dataclasses.asdict(self.config), indent=2) + "\n", encoding="utf-8")
        if not only_table:
            for name, step in plan:
                if (only_steps and name not in only_steps) or self._step_done(name):
                    continue
                started = time.perf_counter()
                print(f"[ablation] {name} ...", flush=True)
                step()
                elapsed = time.perf_counter() - started
                self._record(name, elapsed)
                print(f"[ablation] {name} done in {elapsed:.0f} s", flush=True)
                self.write_table()
        return self.write_table()

    def _record(self, name: str, elapsed: float) -> None:
        """Add a finished step to steps.json under a lock, re-reading it first, so that steps finished
        by another process running side by side are kept."""
        def add(steps: dict[str, Any]) -> None:
            steps[name] = {"done": True, "wall_s": steps.get(name, {}).get("wall_s", 0.0) + elapsed}

        self.steps = update_json(self.steps_path, add)

    # -- the table -----------------------------------------------------------------------------
    def _rows(self, model: str, set_name: str) -> dict[str, dict[str, Any]] | None:
        """The per-item rows (id -> row) of a finished evaluation, read once per table, else None."""
        if not self._step_done(f"eval:{model}:{set_name}"):
            return None
        key = (model, set_name)
        if key not in self._read:
            from training.self_eval import read_rows

            self._read[key] = read_rows(self.root / "eval" / model / f"{set_name}.jsonl")
        return self._read[key]

    def _scores(self, model: str, set_name: str) -> dict[str, float] | None:
        """Per-item scores (id -> value) of a finished evaluation, else None."""
        if not self._step_done(f"eval:{model}:{set_name}"):
            return None
        if set_name == "ifeval":
            return item_scores(self.root / "eval" / model, "ifeval")
        return item_scores(self.root / "eval" / model, set_name, rows=self._rows(model, set_name))

    def _dimension(self, model: str, name: str) -> dict[str, float] | None:
        """Per-case values of one judge dimension on T2 (cases where the judge scored it)."""
        rows = self._rows(model, "variant_qa")
        if rows is None:
            return None
        if name == "renamed_tool_called":
            renamed = self._renamed_tool_cases()
            return {i: 0.0 if "missing_tool_call" in r["reasons"] else 1.0 for i, r in rows.items()
                    if r.get("harness") in renamed.get(i, ())}
        return {i: float(r["dimensions"][name]) for i, r in rows.items()
                if (r.get("dimensions") or {}).get(name) is not None}

    def _outcomes(self, model: str, set_name: str) -> dict[str, int] | None:
        """How the requests of a finished T1/T2 evaluation ended (the runtime's outcome), else None."""
        from evaluation.summary import outcome_counts

        rows = self._rows(model, set_name)
        if rows is None:
            return None
        # the one definition (evaluation.summary): effective = replied with Effectiveness 1
        return outcome_counts([{"outcome": row.get("outcome"), "effectiveness": row.get("effectiveness")}
                               for row in rows.values()])

    def _renamed_tool_cases(self) -> dict[str, set[str]]:
        """Held-out case id -> the evaluation variants under which a tool its gold needs has a new name.
        The variants are rebuilt from their seeds as ``training.self_eval`` builds them (no agents)."""
        if self._renamed is not None:
            return self._renamed
        from harness import load_dir
        from harness.augment import augment_bundle
        from training.cases import held_out_cases
        from training.hsa import merged_requirements, variant_seeds
        from training.self_eval import EVAL_POOL_SIZE, EVAL_VARIANT_SEED, VARIANT_DIMS
        from training.stage_common import resolve_harness_dir

        cases = held_out_cases()[:self.config.eval_cases]
        bundle, requirements = load_dir(resolve_harness_dir(self.config.harness)), merged_requirements(cases)

        def needed(case: dict[str, Any]) -> list[str]:
            return [t["name"] for t in (case.get("gold") or {}).get("tool_calls", []) if not t.get("optional")]

        self._renamed = {}
        for seed in variant_seeds(EVAL_VARIANT_SEED // 1000, EVAL_POOL_SIZE):
            mapping = augment_bundle(bundle=bundle, seed=seed, dims=list(VARIANT_DIMS),
                                     requirements=requirements).mapping
            for case in cases:
                try:
                    if needed(mapping.remap_case(case)) != needed(case):
                        self._renamed.setdefault(case["id"], set()).add(f"hsa{seed}")
                except ValueError:  # a gold skill masked in this variant: the case ran on the original
                    continue
        return self._renamed

    def _bootstrap(self, base: dict[str, float], cand: dict[str, float]) -> dict[str, float]:
        return paired_difference(base, cand, resamples=self.config.resamples)

    def step_states(self) -> list[dict[str, Any]]:
        """Every step of the plan, in order: its name, whether it is done and its wall time (steps.json)."""
        return [{"name": name, "done": self._step_done(name), "wall_s": self.steps.get(name, {}).get("wall_s")}
                for name, _ in self.plan()]

    def write_table(self) -> dict[str, Any]:
        """Build the table from what is done and write table.json and table.md."""
        table = self.table()
        (self.root / "table.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
        (self.root / "table.md").write_text(self.markdown(table), encoding="utf-8")
        return table

    def table(self) -> dict[str, Any]:
        """The table's data from the folder (per-item evaluation rows, steps.json); nothing is written."""
        self._read: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}  # evaluation rows read for this table
        table: dict[str, Any] = {"models": {}, "targets": {}, "wall_s": {}}
        for model in MODELS:
            row: dict[str, Any] = {}
            for set_name in SET_LABELS:
                scores = self._scores(model, set_name)
                if scores is None:
                    continue
                cell: dict[str, Any] = {"score": 100 * sum(scores.values()) / len(scores), "n": len(scores)}
                base = self._scores("base", set_name)
                if model != "base" and base is not None:
                    cell["vs_base"] = self._bootstrap(base, scores)
                row[set_name] = cell
            table["models"][model] = row
        table["t2_steps"] = {}
        fixed_dims = {name: self._dimension("fixed_sft", name) for name in STEP_DIMENSIONS}
        for model in MODELS:
            cells = {}
            for name in STEP_DIMENSIONS:
                values = self._dimension(model, name)
                if values == {}:
                    cells[name] = {"score": None, "n": 0}  # scored, but the judge had nothing to grade
                elif values:
                    cells[name] = {"score": 100 * sum(values.values()) / len(values), "n": len(values)}
                    if model != "fixed_sft" and fixed_dims[name]:
                        cells[name]["vs_fixed_sft"] = self._bootstrap(fixed_dims[name], values)
            table["t2_steps"][model] = cells
        table["outcomes"] = {model: {set_name: counts for set_name in OUTCOME_SETS
                                     if (counts := self._outcomes(model, set_name)) is not None}
                             for model in MODELS}
        fixed, hsa = self._scores("fixed_sft", "variant_qa"), self._scores("hsa_sft", "variant_qa")
        if fixed and hsa:
            table["targets"]["hsa_sft_vs_fixed_sft_on_T2"] = {**self._bootstrap(fixed, hsa), "target": ">= +5"}
        base_if, full_if = self._scores("base", "ifeval"), self._scores("rl", "ifeval")
        if base_if and full_if:
            table["targets"]["full_pipeline_vs_base_on_IFE-P"] = {
                **self._bootstrap(base_if, full_if), "target": "within 2 points or interval includes 0"}
        table["wall_s"] = {name: round(info.get("wall_s", 0.0), 1) for name, info in self.steps.items()}
        return table

    def markdown(self, table: dict[str, Any]) -> str:
        header = "| Model | " + " | ".join(SET_LABELS.values()) + " |"
        lines = [f"# HAT ablation ({self.config.model}, {self.root.name})", "",
                 "Scores x100; in brackets: paired-bootstrap 95% interval of the difference to Base "
                 f"({self.config.resamples} resamples).", "", header,
                 "|" + "---|" * (len(SET_LABELS) + 1)]
        for model in MODELS:
            cells = []
            for set_name in SET_LABELS:
                cell = table["models"].get(model, {}).get(set_name)
                if cell is None:
                    cells.append("pending")
                    continue
                text = f"{cell['score']:.1f}"
                if "vs_base" in cell:
                    b = cell["vs_base"]
                    text += f" ({b['delta']:+.1f} [{b['low']:+.1f}, {b['high']:+.1f}])"
                cells.append(text)
            lines.append(f"| {LABELS[model]} | " + " | ".join(cells) + " |")
        lines += ["", "## T2 step-level dimensions", "",
                  "Judge dimensions on Harness-Variant QA (x100); in brackets: the difference to Fixed-Harness SFT "
                  "with its paired-bootstrap 95% interval.", "",
                  "| Model | " + " | ".join(STEP_DIMENSIONS.values()) + " |", "|" + "---|" * (len(STEP_DIMENSIONS) + 1)]
        for model in MODELS:
            cells = []
            for name in STEP_DIMENSIONS:
                cell = table.get("t2_steps", {}).get(model, {}).get(name)
                if cell is None:
                    cells.append("pending")
                    continue
                text = "n/a" if cell["score"] is None else f"{cell['score']:.1f} (n={cell['n']})"
                if "vs_fixed_sft" in cell:
                    b = cell["vs_fixed_sft"]
                    text += f" ({b['delta']:+.1f} [{b['low']:+.1f}, {b['high']:+.1f}])"
                cells.append(text)
            lines.append(f"| {LABELS[model]} | " + " | ".join(cells) + " |")
        lines += ["", "## How requests ended", "",
                  "Replied (of which effective) / fallback reply / suppressed / silent, of n requests. A fallback "
                  "is accurate but not effective, so a model that never finishes scores AVG ~50.", "",
                  "| Model | " + " | ".join(SET_LABELS[s].removesuffix(" AVG") for s in OUTCOME_SETS) + " |",
                  "|" + "---|" * (len(OUTCOME_SETS) + 1)]
        for model in MODELS:
            cells = []
            for set_name in OUTCOME_SETS:
                c = table.get("outcomes", {}).get(model, {}).get(set_name)
                other = c and c["n"] - sum(c[name] for name in OUTCOMES)
                cells.append("pending" if c is None else
                             f"{c['replied']} ({c['effective']} effective) / {c['fallback']} / "
                             f"{c['suppressed']} / {c['silent']}" + (f" / {c['error']} error" if c['error'] else "")
                             + (f" / {other} other" if other else "")
                             + f" of {c['n']}")
            lines.append(f"| {LABELS[model]} | " + " | ".join(cells) + " |")
        lines += ["", "## Targets", ""]
        for name, t in table["targets"].items():
            lines.append(f"- {name}: delta {t['delta']:+.1f} [{t['low']:+.1f}, {t['high']:+.1f}], "
                         f"P(delta<=0)={t['p_delta_le_zero']:.3f}, n={t['n']} (target {t['target']})")
        if not table["targets"]:
            lines.append("- pending")
        lines += ["", "## Wall time per step", ""]
        lines += [f"- {name}: {secs:.0f} s" for name, secs in table["wall_s"].items()]
        return "\n".join(lines) + "\n"


def read_ablation(folder: str | Path) -> dict[str, Any] | None:
    """What an ablation folder holds, rebuilt from its files by the code that writes table.md: the
    config it ran with (ablation_config.json), the table's data (``Ablation.table``), every step of
    the plan with its state, and the Markdown. None when the folder holds no ablation yet."""
    from training.base_config import config_from_dict

    config_path = Path(folder) / "ablation_config.json"
    if not config_path.is_file():
        return None
    config = config_from_dict(AblationConfig, json.loads(config_path.read_text(encoding="utf-8")),
                              source=str(config_path))
    ablation = Ablation(dataclasses.replace(config, output_dir=str(folder)))
    table = ablation.table()
    return {"config": dataclasses.asdict(ablation.config), "table": table, "steps": ablation.step_states(),
            "markdown": ablation.markdown(table)}


def run_ablation(config: AblationConfig, *, only_table: bool = False,
                 only_steps: tuple[str, ...] = ()) -> dict[str, Any]:
    return Ablation(config).run(only_table=only_table, only_steps=only_steps)
