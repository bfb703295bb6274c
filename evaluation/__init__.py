"""Evaluation for Harness Studio: case format, synthetic sets, judges, statistics, IFEval, runner.

No Django here. The CLI is ``python -m evaluation`` (see docs/evaluation.md).
"""
