"""General-domain prompts for stage 2 (OPD): the project's own set, or a user's dataset.

The built-in set (``training/data/general_prompts.jsonl``) was written for this
project: writing, reasoning, formatting constraints, summarisation and chit-chat,
none taken from IFEval (a test checks). A user's dataset can be a local file or
folder (JSONL / JSON / Parquet / CSV with a ``prompt`` or ``messages`` column) or
a datasets hub name such as ``allenai/tulu-3-sft-mixture`` where a hub is reachable;
for chat datasets the conversation up to the first assistant turn is the prompt.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

BUILTIN_PATH = Path(__file__).parent / "data" / "general_prompts.jsonl"
CATEGORIES = ("writing", "reasoning", "formatting", "summarisation", "chitchat")


def builtin_prompts() -> list[dict[str, str]]:
    """Rows of ``{"id", "category", "prompt"}``."""
    return [
        json.loads(line)
        for line in BUILTIN_PATH.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]


def _prompt_of(row: dict[str, Any], *, where: str) -> list[dict[str, str]] | None:
    if isinstance(row.get("prompt"), str) and row["prompt"].strip():
        return [{"role": "user", "content": row["prompt"]}]
    if isinstance(row.get("prompt"), list):
        return [{"role": m["role"], "content": str(m["content"])} for m in row["prompt"]]
    messages = row.get("messages") or row.get("conversations")
    if isinstance(messages, list):
        prompt = []
        for m in messages:
            role = m.get("role") or {"human": "user", "gpt": "assistant"}.get(m.get("from", ""), "")
            if role == "assistant":
                break
            if role in ("system", "user"):
                prompt.append({"role": role, "content": str(m.get("content", m.get("value", "")))})
        return prompt or None
    raise ValueError(
        f"{where}: a prompt row needs a 'prompt' string or a 'messages' list; "
        f"it has {', '.join(sorted(row)) or 'no fields'}"
    )


def _load_user_rows(source: str, split: str) -> list[dict[str, Any]]:
    from datasets import load_dataset

    path = Path(source).expanduser()
    if path.is_file():
        if path.suffix in (".jsonl", ".json"):
            return list(load_dataset("json", data_files=str(path), split="train"))
        if path.suffix == ".parquet":
            return list(load_dataset("parquet", data_files=str(path), split="train"))
        if path.suffix == ".csv":
            return list(load_dataset("csv", data_files=str(path), split="train"))
        raise ValueError(f"prompts: {source}: use a .jsonl, .json, .parquet or .csv file")
    if path.is_dir():
        return list(load_dataset(str(path), split=split))
    try:
        return list(load_dataset(source, split=split))
    except Exception as exc:  # hub unreachable, unknown name: say what would work
        raise ValueError(
            f"prompts: cannot load {source!r} ({type(exc).__name__}: {exc}); use 'builtin', a "
            "local file/folder, or a hub dataset name where a hub is reachable"
        ) from None


def load_general_prompts(
    source: str = "builtin", *, limit: int, seed: int, split: str = "train"
) -> list[list[dict[str, str]]]:
    """Chat-message prompts for OPD, shuffled by ``seed`` and cut to ``limit``."""
    if source in ("", "builtin"):
        rows: list[dict[str, Any]] = builtin_prompts()
    else:
        rows = _load_user_rows(source, split)
    prompts = []
    for i, row in enumerate(rows):
        prompt = _prompt_of(row, where=f"{source} row {i}")
        if prompt:
            prompts.append(prompt)
    if not prompts:
        raise ValueError(f"prompts: {source!r} has no usable prompts")
    random.Random(seed).shuffle(prompts)
    return prompts[:limit]
