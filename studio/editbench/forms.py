"""The edit benchmark's choice: a stage and the two endpoints it compares, from the page's form or a
link."""

from __future__ import annotations

from django import forms

from studio.forms import TypedText


class BenchmarkChoiceForm(forms.Form):
    """Ids as typed; one that is no whole number chooses nothing (the page then asks for it)."""

    stage = TypedText()
    a = TypedText(help_text="The first endpoint's id.")
    b = TypedText(help_text="The second endpoint's id.")
