"""Audit: an append-only log of every change made through the studio."""
