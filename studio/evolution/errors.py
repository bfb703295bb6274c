"""The one user error of the evolution loop's services."""

from __future__ import annotations


class EvolutionError(ValueError):
    """A user error in the evolution loop; the message names the field and what is valid."""
