"""The form of a new release: what it ships (checkpoint, draft head, Harness version) and its notes.

It parses the fields; ``services.release_check`` says what each may name (and how long it may
be)."""

from __future__ import annotations

from django import forms

from studio.forms import TypedText


class ReleaseForm(forms.Form):
    checkpoint = TypedText()
    draft_head = TypedText()
    harness_version = TypedText()
    notes = TypedText()
    action = TypedText(
        help_text="'check': show the gates the release would have, nothing saved; else draft it."
    )
