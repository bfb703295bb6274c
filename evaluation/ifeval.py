"""IFEval (docs/architecture.md §6, T4): general instruction following scored with lm-eval's
official checkers.

The checkers are used from the ``lm-eval`` package, not copied. Prompts come from, in order of
preference: an explicit ``source`` (``--source``: a JSONL path in the official format,
``google/IFEval`` through ``datasets``, or ``generated[:SEED]``); the file (or ``google/IFEval``)
named by the setting ``HARNESS_IFEVAL_PATH``; else the project's own generated set
(:mod:`evaluation.instruction_set`: seeded, offline, built and scored by the same checkers).
Nothing is looked for beside the checkout: a clone evaluates instruction following with no file
of its own, and the official 541 prompts are used only when a setting names them. Every result
carries its source (:func:`describe_source`: kind, label, digest of the prompts), so pages say
which set a score is on and two runs pair only on the same prompts.

A missing file is an ``IFEvalSourceMissing`` (an ``InputFileError``: one line at the CLIs)
naming the path and how to set it, never a bare ``FileNotFoundError``. NLTK's sentence tokenizer
data is written offline by :mod:`evaluation.nltk_data` before the checkers are imported, because
lm-eval would otherwise try to download it.

Metrics: prompt-level and instruction-level accuracy, strict and loose
(lm-eval's ``process_results``), plus instruction-level accuracy per
instruction family (``keywords``, ``length_constraints`` ...).
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from evaluation.nltk_data import ensure_nltk_data
from harness.jsonl import finished_records, jsonl_records
from harness.policies import GenerationSettings, RoleModel
from harness.userfiles import InputFileError

IFEVAL_PATH_ENV = "HARNESS_IFEVAL_PATH"
HUB_DATASET = "google/IFEval"
GENERATED = "generated"
OFFICIAL_LABEL = "IFEval (official prompts)"
_REQUIRED = ("key", "prompt", "instruction_id_list", "kwargs")


class IFEvalSourceMissing(InputFileError):
    """The IFEval prompt file is not where it was looked for; the message says how to point at
    one."""


def configured_source() -> str:
    """The prompts a run reads when it is given no source: $HARNESS_IFEVAL_PATH, else the generated
    set."""
    return os.environ.get(IFEVAL_PATH_ENV, "").strip() or GENERATED


def _generated_seed(source: str) -> int | None:
    """The seed of a ``generated`` / ``generated:SEED`` source, None for any other source."""
    name, _, seed = source.partition(":")
    if name != GENERATED:
        return None
    from evaluation.instruction_set import DEFAULT_SEED

    if not seed:
        return DEFAULT_SEED
    from harness.numbers import decimal_int

    value = decimal_int(seed)
    if value is None:
        raise InputFileError(
            f"IFEval source {source!r}: the seed after 'generated:' must be a whole number"
        )
    return value


def load_ifeval_prompts(
    *, source: str | Path | None = None, limit: int | None = None
) -> list[dict]:
    """Load IFEval prompts as dicts with key, prompt, instruction_id_list and kwargs.

    ``source`` is a JSONL path, ``"google/IFEval"`` (through ``datasets``), ``"generated"`` /
    ``"generated:SEED"`` (:mod:`evaluation.instruction_set`), or None for :func:`configured_source`.
    """
    name = str(source) if source is not None else configured_source()
    seed = _generated_seed(name)
    if seed is not None:
        from evaluation.instruction_set import generated_prompts

        return generated_prompts(size=limit, seed=seed)
    if name == HUB_DATASET:
        import datasets

        rows = [dict(r) for r in datasets.load_dataset(HUB_DATASET, split="train")]
    else:
        path = Path(name).expanduser()
        if not path.is_file():
            where = (
                "given as the source"
                if source is not None
                else f"from the setting {IFEVAL_PATH_ENV}"
            )
            raise IFEvalSourceMissing(
                f"IFEval prompts not found at {path} ({where}); give a JSONL file in the official "
                f"format (fields {', '.join(_REQUIRED)}), "
                f"'{HUB_DATASET}' where `datasets` can load it, "
                f"or leave {IFEVAL_PATH_ENV} unset for the project's generated set"
            )
        rows = []
        for lineno, row in jsonl_records(path, error=InputFileError):
            missing = [k for k in _REQUIRED if not isinstance(row, dict) or k not in row]
            if missing:
                raise InputFileError(f"{path}:{lineno}: missing field(s) {', '.join(missing)}")
            rows.append(row)
    return rows[:limit] if limit is not None else rows


def describe_source(*, prompts: Sequence[dict], source: str | Path | None = None) -> dict:
    """What a score is on, for pages and pairing: ``kind`` (generated | file | hub), ``label``,
    where it came from and the digest of the prompts as scored."""
    from evaluation.instruction_set import LABEL, prompts_digest

    name = str(source) if source is not None else configured_source()
    seed = _generated_seed(name)
    if seed is not None:
        kind, label = "generated", f"{LABEL}, seed {seed}"
    elif name == HUB_DATASET:
        kind, label = "hub", f"{OFFICIAL_LABEL}, {HUB_DATASET}"
    else:
        kind, label = "file", f"IFEval prompts from {Path(name).name}"
    return {
        "kind": kind,
        "label": label,
        "source": name,
        "seed": seed,
        "n": len(prompts),
        "digest": prompts_digest(list(prompts)),
    }


def _process_results():
    ensure_nltk_data()
    from lm_eval.tasks.ifeval.utils import process_results

    return process_results


@dataclass
class IFEvalResult:
    """Scores of one IFEval run; ``rows`` holds each prompt's response and verdicts."""

    n_prompts: int
    prompt_strict: float
    inst_strict: float
    prompt_loose: float
    inst_loose: float
    per_family_strict: dict[str, float] = field(default_factory=dict)
    rows: list[dict] = field(default_factory=list)
    seconds: float = 0.0
    source: dict = field(
        default_factory=dict
    )  # describe_source(): which prompts these scores are on

    def to_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        label = self.source.get("label", "IFEval")
        return (
            f"{label} n={self.n_prompts}: IFE-P strict {100 * self.prompt_strict:.1f} "
            f"loose {100 * self.prompt_loose:.1f} | IFE-I strict {100 * self.inst_strict:.1f} "
            f"loose {100 * self.inst_loose:.1f}"
        )


def check_response(*, prompt: dict, response: str) -> dict:
    """Verdicts of the official checkers for one response (lm-eval's process_results keys)."""
    return _process_results()(prompt, [response])


def score_responses(*, prompts: Sequence[dict], responses: Sequence[str]) -> IFEvalResult:
    """Score responses (same order as prompts) with the strict and loose checkers."""
    if len(prompts) != len(responses):
        raise ValueError(f"{len(prompts)} prompts but {len(responses)} responses")
    if not prompts:
        raise ValueError("no IFEval prompts to score")
    rows, inst_strict, inst_loose = [], [], []
    family: dict[str, list[bool]] = defaultdict(list)
    for prompt, response in zip(prompts, responses, strict=True):
        verdict = check_response(prompt=prompt, response=response)
        inst_strict += verdict["inst_level_strict_acc"]
        inst_loose += verdict["inst_level_loose_acc"]
        for inst_id, ok in zip(
            prompt["instruction_id_list"], verdict["inst_level_strict_acc"], strict=True
        ):
            family[inst_id.split(":")[0]].append(ok)
        rows.append({"key": prompt["key"], "response": response, **verdict})
    return IFEvalResult(
        n_prompts=len(rows),
        prompt_strict=sum(r["prompt_level_strict_acc"] for r in rows) / len(rows),
        inst_strict=sum(inst_strict) / len(inst_strict),
        prompt_loose=sum(r["prompt_level_loose_acc"] for r in rows) / len(rows),
        inst_loose=sum(inst_loose) / len(inst_loose),
        per_family_strict={k: sum(v) / len(v) for k, v in sorted(family.items())},
        rows=rows,
    )


def ifeval_answerer(model: RoleModel, *, max_new_tokens: int) -> Callable[[str], str]:
    """How an IFEval prompt is answered, by the CLI and by training's self-evaluation alike: the
    prompt as the one user turn, greedy, ``max_new_tokens`` at most, through the ifeval role's model
    (``harness.policies.role_model("ifeval", spec)``, or ``RoleModel`` over a policy already
    loaded)."""
    generation = GenerationSettings(temperature=0.0, max_new_tokens=max_new_tokens)

    def answer(prompt: str) -> str:
        return model.chat([{"role": "user", "content": prompt}], generation=generation).text

    return answer


def run_ifeval(
    *,
    generate: Callable[[str], str],
    source: str | Path | None = None,
    limit: int | None = None,
    progress: bool = True,
    responses_path: str | Path | None = None,
    prompts: Sequence[dict] | None = None,
) -> IFEvalResult:
    """Generate one response per prompt with ``generate(prompt) -> text`` and score them.

    ``prompts`` are those :func:`load_ifeval_prompts` loaded from ``source`` and ``limit`` already
    (a caller that checks the source before loading a model); by default they are loaded here.

    With ``responses_path`` every response is appended there as it is made
    (``{"key", "response"}`` per line) and prompts already answered there are
    not generated again, so a killed run resumes. This is the one answer-resume-score loop: the
    CLI and training's self-evaluation (``training.self_eval``) both run it; a file written by
    the self-evaluation before it did names each prompt ``id``, and is read the same.
    """
    from tqdm import tqdm

    if prompts is None:
        prompts = load_ifeval_prompts(source=source, limit=limit)
    set_info = describe_source(prompts=prompts, source=source)
    done: dict[str, str] = {}
    path = Path(responses_path) if responses_path else None
    if path is not None and path.exists():
        kept = {str(row.get("key", row.get("id"))): row for row in finished_records(path)}
        done = {key: row["response"] for key, row in kept.items()}
        path.write_text(
            "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in kept.values()),
            encoding="utf-8",
        )  # drop a torn tail
    started = time.perf_counter()
    responses = []
    for prompt in tqdm(prompts, desc="ifeval", disable=not progress):
        key = str(prompt["key"])
        if key not in done:
            done[key] = generate(prompt["prompt"])
            if path is not None:
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(
                        json.dumps(
                            {"key": prompt["key"], "response": done[key]}, ensure_ascii=False
                        )
                        + "\n"
                    )
        responses.append(done[key])
    result = score_responses(prompts=prompts, responses=responses)
    result.seconds = time.perf_counter() - started
    result.source = set_info
    return result
