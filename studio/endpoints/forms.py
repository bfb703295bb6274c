"""Forms of the endpoint pages: a model endpoint, an endpoint secret, the endpoint a model role
calls.

They parse the posted fields; ``services`` checks what each value may be (and says so, field by
field)."""

from __future__ import annotations

from django import forms

from studio.endpoints.models import ModelEndpoint
from studio.forms import TypedText


class RoleEndpointForm(forms.Form):
    role = TypedText()
    endpoint = TypedText(help_text="The endpoint's name; empty: the role has no endpoint.")


class EndpointForm(forms.Form):
    name = TypedText()
    route = TypedText(help_text="Not sent: an OpenAI-compatible endpoint.")
    base_url = TypedText()
    model = TypedText()
    api_key_secret = TypedText(help_text="The name of the endpoint secret sent as the API key.")
    script_path = TypedText()
    description = TypedText()

    def clean_route(self) -> str:
        return self.cleaned_data["route"] if "route" in self.data else ModelEndpoint.OPENAI


class SecretForm(forms.Form):
    name = TypedText()
    value = TypedText()
    from_env = TypedText()
    allowed_origins = TypedText()
    description = TypedText()
