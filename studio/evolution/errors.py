"""The one user error of the evolution loop's services."""

from __future__ import annotations


class EvolutionError(ValueError):
    """A user error in the evolution loop; the message names the field and what is valid."""


class CandidateExists(EvolutionError):
    """The stage's candidate files are an existing version of the Harness (after a roll-back the
    diagnosis can propose the same fix again): the page offers to evaluate that version as the
    candidate, or to promote it, instead of a dead end."""

    def __init__(self, *, version, stage):
        self.version = version
        super().__init__(
            f"candidate: these edits give {version.harness.name} v{version.number}, which "
            f"already exists (committed {version.created_at:%Y-%m-%d %H:%M}): evaluate "
            f"v{version.number} as stage {stage.number}'s candidate, or promote it"
        )
