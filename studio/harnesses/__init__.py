"""Harnesses: Harness, immutable content-addressed versions, labels, drafts, diffs,
import/export."""
