"""The worker check's form: how long the check job sleeps."""

from __future__ import annotations

from django import forms
from django.conf import settings


class WorkerCheckForm(forms.Form):
    seconds = forms.CharField(
        required=False, strip=False, help_text="From 0.5 to WORKER_CHECK_MAX_S (not sent: 5)."
    )

    def clean_seconds(self) -> float:
        raw = (
            self.cleaned_data["seconds"] if "seconds" in self.data else "5"
        )  # sent empty: refused, as typed
        longest = settings.WORKER_CHECK_MAX_S
        try:
            seconds = float(raw)
        except ValueError:
            seconds = float("nan")
        if not 0.5 <= seconds <= longest:  # NaN fails this too
            raise forms.ValidationError(f"a number from 0.5 to {longest:g}, not {raw[:40]!r}")
        return seconds
