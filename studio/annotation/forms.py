"""Forms of the annotation pages: feeding a queue, labelling an item, starting a judge calibration.

They parse the posted fields; what a label or a calibration may hold is checked by the services."""

from __future__ import annotations

from django import forms

from studio.evolution.models import Dataset
from studio.forms import TypedText, WholeNumberField


class TrajectoryIds(forms.Field):
    """The ticked trajectories' ids (checkboxes named ``trajectory``); a value that is no id is
    skipped."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value) -> list[int]:
        return [int(i) for i in value or [] if isinstance(i, str) and i.isdigit()]


def _dataset(*, required: bool) -> forms.ModelChoiceField:
    return forms.ModelChoiceField(
        queryset=Dataset.objects.all(),
        to_field_name="name",
        required=required,
        error_messages={
            "required": "choose a dataset",
            "invalid_choice": "no dataset named %(value)r",
        },
    )


class QueueTargetForm(forms.Form):
    """The queue a feed goes to: an existing one (``queue``) or, when that is empty, a new one
    (``new_queue``)."""

    queue = forms.CharField(required=False)
    new_queue = TypedText()


class TrafficToQueueForm(QueueTargetForm):
    trajectory = TrajectoryIds(required=False)


class SourceToQueueForm(QueueTargetForm):
    """A run's failing cases (``run``, checked first) or a whole dataset (``dataset``)."""

    run = WholeNumberField(required=False)
    dataset = _dataset(required=False)


class LabelForm(forms.Form):
    """One person's label of one item, as typed (``label_save`` says what each field may hold)."""

    accuracy = TypedText()
    effectiveness = TypedText()
    category = TypedText()
    route = TypedText()
    reply_skills = TypedText()
    tools = TypedText()
    note = TypedText()


class CalibrationForm(forms.Form):
    """A judge of ``calibration.judge_choices`` and a label set: ``committed`` (the committed human
    set) or the name of a set exported from a queue (``calibration_start`` checks both)."""

    judge = TypedText()
    dataset = TypedText()
