"""The studio's user error: a mistake a user can make, whose message says what would be valid.

Each app's errors derive from it or stand beside it (``studio.harnesses.services.errors`` adds the
bundle's); a view turns one into a message on the page, never a 500.
"""

from __future__ import annotations


class StudioError(ValueError):
    """A mistake a user can make; the message says what would be valid."""
