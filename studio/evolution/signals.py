"""The evolution app's signals, which other apps receive (docs/architecture.md §1); what it
receives itself is ``studio.evolution.receivers``."""

from __future__ import annotations

from django.dispatch import Signal

#: Sent (run_id=) when a run has scored every case and written its summary, before it is marked
#: succeeded: what follows a run (a stage's regression report, a compatibility cell's figures)
#: listens here, so runs know nothing of stages.
eval_run_scored = Signal()
