"""The training app's events that other apps react to (docs/architecture.md §1: cross-app reactions
are signals, so training imports none of the apps that follow it)."""

from __future__ import annotations

from django.dispatch import Signal

#: A finished policy run's model entered the registry (``run``: the TrainingRun). A receiver that
#: queues a follow-on job returns ``(job, sentence)``: the training job's log names it with the
#: sentence, and its result lists the job (``follow_on_jobs``); a receiver that decided against one
#: (a smoke run's checkpoint) returns ``(None, why)``; a receiver with nothing to do returns None.
checkpoint_registered = Signal()
