"""Forms of the Harness pages: importing a bundle, moving and rolling back labels, and the editor's
drafts (files, skills, hooks, commits and conflicts).

They parse the posted fields; the services check what each value may be (a label move's release
gates, a file's validation, a stale revision turned into a conflict)."""

from __future__ import annotations

from django import forms
from django.conf import settings

from studio.forms import ReasonForm, TypedText, WholeNumberField


def _within_import_limit(upload):
    """An uploaded archive no larger than MAX_IMPORT_BYTES, checked before it is read."""
    if upload.size > settings.MAX_IMPORT_BYTES:
        raise forms.ValidationError(f"the file is larger than {settings.MAX_IMPORT_BYTES} bytes")
    return upload


class BundleImportForm(forms.Form):
    bundle = forms.FileField(
        allow_empty_file=True,  # the archive reader says why an empty file is no .zip
        error_messages={"required": "choose a .zip of a Harness directory"},
    )
    message = forms.CharField(required=False)

    def clean_bundle(self):
        return _within_import_limit(self.cleaned_data["bundle"])

    def clean_message(self) -> str:
        return self.cleaned_data["message"] or "Imported from a .zip"


class LabelMoveForm(ReasonForm):
    label = forms.CharField(required=False)
    version = WholeNumberField(help_text="The version number the label is to point at.")

    def clean_label(self) -> str:
        return self.cleaned_data["label"].lower()


# -- the editor
# --------------------------------------------------------------------------------------------


class DraftCreateForm(forms.Form):
    base = WholeNumberField(help_text="The number of the version the draft starts from.")
    title = TypedText()


class RevisionForm(forms.Form):
    """An edit of a draft names the revision it was made on; a newer draft turns it into a
    conflict."""

    revision = WholeNumberField()


class FileSaveForm(RevisionForm):
    path = TypedText()
    text = TypedText()


class FileDeleteForm(RevisionForm):
    path = TypedText()


class SkillPreviewForm(forms.Form):
    text = TypedText()


class SkillAddForm(RevisionForm):
    name = TypedText()
    kind = TypedText()
    description = TypedText()


class SkillImportForm(RevisionForm):
    skill = forms.FileField(
        allow_empty_file=True,
        error_messages={  # the archive reader says why an empty file is no .zip
            "required": "choose a .zip of an Agent Skills folder (the folder that holds SKILL.md)"
        },
    )
    kind = TypedText(
        help_text="Asked for when the folder does not say (empty: read from the folder)."
    )

    def clean_skill(self):
        return _within_import_limit(self.cleaned_data["skill"])


class HookAddForm(RevisionForm):
    id = forms.CharField(required=False)
    event = TypedText()
    type = TypedText()
    matcher = TypedText()
    params = TypedText()
    action = TypedText()
    message = TypedText()


class DraftCommitForm(forms.Form):
    message = TypedText()


class ExistingVersionForm(forms.Form):
    """The changes page's ``?existing=N``: the version a commit found the draft's files to be."""

    existing = forms.IntegerField(min_value=1, required=False)


class ConflictResolveForm(forms.Form):
    choice = TypedText(help_text="'mine', 'theirs', or else the merged text (``text``) is saved.")
    text = TypedText()
