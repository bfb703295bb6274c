"""Shared test setup: the whole suite runs offline, on the tiny model."""

import os
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# IFEval prompts come from the project's own fixture (official format), never from ../shared, so the
# suite passes on a bare clone; the tests of the official file read its default path and skip without it.
os.environ["HARNESS_IFEVAL_PATH"] = str(Path(__file__).parent / "fixtures" / "ifeval" / "input_data.jsonl")
