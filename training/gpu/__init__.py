"""The prepared GPU run of the whole pipeline (``python -m training.gpu``; docs/training.md)."""
