"""Forms of the Harness pages: importing a bundle, moving and rolling back labels.

They parse the posted fields; the services check what a label move may do (release gates included)."""

from __future__ import annotations

from django import forms
from django.conf import settings

from studio.evolution.forms import ReasonForm
from studio.forms import WholeNumberField


class BundleImportForm(forms.Form):
    bundle = forms.FileField(allow_empty_file=True,  # the archive reader says why an empty file is no .zip
                             error_messages={"required": "choose a .zip of a Harness directory"})
    message = forms.CharField(required=False)

    def clean_bundle(self):
        upload = self.cleaned_data["bundle"]
        if upload.size > settings.MAX_IMPORT_BYTES:  # checked before the file is read
            raise forms.ValidationError(f"the file is larger than {settings.MAX_IMPORT_BYTES} bytes")
        return upload

    def clean_message(self) -> str:
        return self.cleaned_data["message"] or "Imported from a .zip"


class LabelMoveForm(ReasonForm):
    label = forms.CharField(required=False)
    version = WholeNumberField(help_text="The version number the label is to point at.")

    def clean_label(self) -> str:
        return self.cleaned_data["label"].lower()
