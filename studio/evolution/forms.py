"""Forms of the evolution pages: starting an evolution, importing a dataset, a reviewer's
decisions."""

from __future__ import annotations

from django import forms

from studio.endpoints.models import ModelEndpoint
from studio.evolution.models import Dataset, Evolution
from studio.forms import TypedText
from studio.harnesses.models import HarnessVersion


class EvolutionForm(forms.Form):
    name = forms.CharField(
        max_length=120, required=False, help_text="Defaults to '<version> on <dataset>'."
    )
    version = forms.ModelChoiceField(
        queryset=HarnessVersion.objects.select_related("harness").defer("tree"),
        help_text="The Harness version the first stage starts from.",
    )
    dataset = forms.ModelChoiceField(queryset=Dataset.objects.all(), to_field_name="name")
    endpoint = forms.ModelChoiceField(
        queryset=ModelEndpoint.objects.all(), help_text="The policy, fixed for the whole evolution."
    )
    limit = forms.IntegerField(
        min_value=1, required=False, help_text="Use an even spread of this many cases (empty: all)."
    )
    categories = forms.CharField(
        required=False, help_text="Comma-separated categories (empty: all)."
    )
    diagnoser = forms.ChoiceField(choices=Evolution._meta.get_field("diagnoser").choices)
    diagnoser_endpoint = forms.ModelChoiceField(
        queryset=ModelEndpoint.objects.none(), required=False
    )
    tolerance = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0.02,
        help_text="Largest per-category AVG drop the business gate allows (0.02 = 2 points).",
    )

    def __init__(self, *args, **kwargs) -> None:
        from studio.evolution.services.diagnosis import diagnoser_endpoints, diagnoser_options

        super().__init__(*args, **kwargs)
        self.fields["diagnoser_endpoint"].queryset = diagnoser_endpoints()
        self.diagnosers = (
            diagnoser_options()
        )  # shown beside the field: usable or not, and why, before any run
        self.fields["diagnoser"].choices = [
            (o.value, o.label if o.usable else f"{o.label} (not usable here)")
            for o in self.diagnosers
        ]

    def clean_categories(self) -> list[str]:
        return [c.strip() for c in self.cleaned_data["categories"].split(",") if c.strip()]

    def clean(self) -> dict:
        from studio.evolution.services.diagnosis import diagnoser_endpoint_problem

        data = super().clean()
        option = next((o for o in self.diagnosers if o.value == data.get("diagnoser")), None)
        if option is not None and not option.usable:
            self.add_error(
                "diagnoser", f"the {option.label} diagnoser is {option.why}; choose rule-based"
            )
        elif data.get("diagnoser") == Evolution.LLM:
            endpoint = data.get("diagnoser_endpoint")
            if endpoint is None:
                self.add_error(
                    "diagnoser_endpoint",
                    "the LLM diagnoser needs the endpoint it calls (an "
                    "OpenAI-compatible one, or the diagnoser role's)",
                )
            elif diagnoser_endpoint_problem(endpoint=endpoint):
                self.add_error(
                    "diagnoser_endpoint",
                    f"not usable: {diagnoser_endpoint_problem(endpoint=endpoint)}",
                )
        return data


class DatasetImportForm(forms.Form):
    name = forms.SlugField(max_length=80)
    description = forms.CharField(required=False)
    cases = forms.FileField(help_text="A JSONL case file (format hs-case/1, docs/case-format.md).")
    catalogue = forms.FileField(
        required=False,
        help_text="The catalogue JSON the cases refer to (empty: the demo catalogue).",
    )
    heldout_share = forms.FloatField(min_value=0, max_value=0.5, initial=0.2)

    def _capped(self, name: str):
        """An uploaded file no larger than the import limit (MAX_IMPORT_BYTES), checked before it is
        read."""
        from django.conf import settings

        upload = self.cleaned_data.get(name)
        limit = settings.MAX_IMPORT_BYTES
        if upload is not None and upload.size > limit:
            shown = (
                f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit // 1024} KiB"
            )
            raise forms.ValidationError(
                f"{upload.name}: larger than {shown}, the most an import may hold"
            )
        return upload

    def clean_cases(self):
        return self._capped("cases")

    def clean_catalogue(self):
        return self._capped("catalogue")


class CandidateForm(forms.Form):
    message = TypedText(help_text="The commit message of the candidate version.")
    existing = forms.IntegerField(
        min_value=1,
        required=False,
        help_text="The number of the existing version the candidate's files are, to evaluate it "
        "as the candidate (offered when committing found it).",
    )


class CandidateRejectForm(forms.Form):
    reason = TypedText(help_text="Why the candidate is rejected (kept on its proposals).")


class ExistingVersionForm(forms.Form):
    """The stage page's ``?existing=N``: the version a commit found the candidate to be."""

    existing = forms.IntegerField(min_value=1, required=False)


class ProposalReviewForm(forms.Form):
    action = forms.ChoiceField(
        choices=[("accept", "accept"), ("reject", "reject")],
        error_messages={
            "required": "must be accept or reject",
            "invalid_choice": "must be accept or reject",
        },
    )
    reason = TypedText()
