"""Releases: a manifest binding a checkpoint, its draft head and a Harness version, with its gates
and a reviewer's approval."""
