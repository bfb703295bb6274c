"""Harness-Aware Training (HAT) on TRL: HSA-SFT, General OPD and HSA-RL.

``python -m training sft|opd|rl|pipeline|data|ablation --config FILE``; the
stage settings are the dataclasses in ``<stage>_config.py``, the trainers in
``<stage>_trainer.py``. docs/training.md explains the data, the stages and
the run folders.
"""
