"""Forms of the account pages beside Django's sign-in form: the name a sign-in attempt is counted
under, and a new API token's name (the services normalise and check both)."""

from __future__ import annotations

from django import forms
from django.contrib.auth.forms import UsernameField

from studio.forms import TypedText


class SignInAttemptForm(forms.Form):
    """The name typed into the sign-in form, read before the password is checked: the throttle's
    key, read by the field Django's sign-in form reads it with (trimmed, NFKC-normalised), so that
    the name counted is the name Django authenticates."""

    username = UsernameField(required=False)

    def attempted_username(self) -> str:
        """The name as Django reads it ('' when it cannot be read: the address alone is counted
        then)."""
        return self.cleaned_data["username"] if self.is_valid() else ""


class ApiTokenForm(forms.Form):
    name = TypedText()
