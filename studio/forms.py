"""What the apps' forms share. Each app's ``forms.py`` parses its views' input (a view reads
``form.cleaned_data``, never ``request.POST[...]`` by hand); what the values mean is checked by the
app's services, so the API and the commands get the same checks.

An invalid form is shown the way the studio shows every error a user can cause: one line per
problem, naming the field and what would be valid (``run: expected a whole number, got 'x'``).
"""

from __future__ import annotations

from django import forms
from django.core.exceptions import NON_FIELD_ERRORS

from harness.numbers import decimal_int


class TypedText(forms.CharField):
    """An optional text input passed on as typed (not stripped): the service that takes it trims and
    checks it, as it does for the API."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**{"required": False, "strip": False, **kwargs})


class WholeNumberField(forms.Field):
    """A whole number of at most 18 digits (what a database integer holds), surrounding spaces
    ignored."""

    default_error_messages = {"required": "expected a whole number, got nothing"}

    def to_python(self, value):
        if value in self.empty_values:
            return None
        number = decimal_int(value, max_digits=18)
        if number is None:
            raise forms.ValidationError(
                f"expected a whole number, got {str(value)[:40]!r}", code="invalid"
            )
        return number


def form_problems(form: forms.Form) -> list[str]:
    """Each problem of a bound form as one line naming its field (a whole-form problem as it is)."""
    return [
        message if name == NON_FIELD_ERRORS else f"{name}: {message}"
        for name, errors in form.errors.items()
        for message in errors
    ]


def field_problems(form: forms.Form) -> dict[str, str]:
    """Each wrong field's message (the first where there are more), for a page that shows it beside
    the field."""
    return {name: errors[0] for name, errors in form.errors.items()} if form.is_bound else {}


def form_problem(form: forms.Form) -> str:
    """The problems of an invalid form as one message (the studio's flash messages hold one
    line)."""
    return "; ".join(form_problems(form))


def valid_data(form: forms.Form, *, error: type[Exception]) -> dict:
    """The form's cleaned data, or ``error`` raised with its problems: for a view whose error path
    is already the ``except`` of its service's errors, so an unreadable field is shown the same
    way."""
    if not form.is_valid():
        raise error(form_problem(form))
    return form.cleaned_data


class ReasonForm(forms.Form):
    """Why a person decides as they do; ``override_reason`` is what a blocking release gate asks for
    (``studio.promotion`` and ``studio.releases.services`` say when one is needed); shared by the
    evolution's stage decisions, the Harness page's label moves and the release reviews."""

    reason = TypedText()
    override_reason = TypedText()


class DecisionForm(ReasonForm):
    """A reviewer's decision of a stage or a release draft (the service names the decisions it
    takes)."""

    decision = TypedText()
