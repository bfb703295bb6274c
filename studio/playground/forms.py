"""The playground's form: which version (or open draft), endpoint, dataset or case, budget and
request.

It parses the text typed or chosen; the view turns the ids into rows and ``services`` checks the
budget and the request (each message names its field)."""

from __future__ import annotations

from django import forms

from studio.forms import TypedText


class PlaygroundForm(forms.Form):
    version = TypedText(help_text="A Harness version's id.")
    draft = TypedText(help_text="An open editor draft's id (tried instead of a version).")
    endpoint = TypedText(help_text="A model endpoint's id (empty: the default endpoint).")
    dataset = TypedText(
        help_text="A dataset's id: its catalogue, and its cases by id (empty: the demo catalogue)."
    )
    case = forms.CharField(required=False, help_text="A case id of the dataset.")
    budget_s = forms.CharField(
        required=False, help_text="Whole seconds (empty: the Harness's own budget)."
    )
    request_json = TypedText(help_text="A request, or a whole dataset case, as JSON.")
    comment = TypedText()
