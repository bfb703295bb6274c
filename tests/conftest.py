"""Shared test setup: the whole suite runs offline, on the tiny model."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# Instruction-following prompts: the default a clone has (the project's generated set), never a file
# beside the checkout; a setting on the machine running the tests must not change what they score.
os.environ.pop("HARNESS_IFEVAL_PATH", None)
