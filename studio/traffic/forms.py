"""The form of a new deployment (``services.deployment_create`` checks the name)."""

from __future__ import annotations

from django import forms

from studio.forms import TypedText


class DeploymentForm(forms.Form):
    name = TypedText()
    description = TypedText()
