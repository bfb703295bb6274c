"""The deterministic synthetic live-commerce world: catalogue, comments, gold labels and the sets.

``build_world(seed=N)`` returns the catalogue and every set of docs/architecture.md §6 that this
project generates (dev-set, Live-Stream QA, Tool Robustness, Prompt Robustness,
deployment replay). The same seed gives byte-identical files.
"""
