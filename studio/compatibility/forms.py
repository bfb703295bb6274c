"""Forms of the compatibility matrix: asking for a cell, naming the endpoint that serves a label.

They parse the posted ids and names; the services check what a cell or a label's server may be."""

from __future__ import annotations

from django import forms

from studio.forms import TypedText, WholeNumberField
from studio.harnesses.models import Harness


class CellRequestForm(forms.Form):
    endpoint = WholeNumberField(help_text="The endpoint's id.")
    version = WholeNumberField(help_text="The Harness version's id.")


class LabelServerForm(forms.Form):
    harness = forms.ModelChoiceField(
        queryset=Harness.objects.all(),
        to_field_name="name",
        error_messages={
            "required": "no Harness of that name",
            "invalid_choice": "no Harness of that name",
        },
    )
    label = TypedText()
    endpoint = WholeNumberField(required=False, help_text="The endpoint's id (empty: no endpoint).")
