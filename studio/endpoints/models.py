"""A model endpoint: a named policy route, and the NAME of the env var holding its key."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ModelEndpoint(models.Model):
    LOCAL = "local"
    TINY = "tiny"
    OPENAI = "openai"
    SCRIPTED = "scripted"
    ROUTES = [
        (LOCAL, "local model on the worker's CPU (SmolLM2-135M-Instruct, or a checkpoint folder)"),
        (TINY, "tiny random model (tests only)"),
        (OPENAI, "OpenAI-compatible server (SGLang, vLLM, transformers serve, vendor API)"),
        (SCRIPTED, "scripted policy replaying a JSON script file (tests, demos)"),
    ]

    name = models.SlugField(max_length=64, unique=True)
    route = models.CharField(max_length=12, choices=ROUTES)
    base_url = models.URLField(blank=True, help_text="e.g. http://127.0.0.1:8001/v1 (OpenAI-compatible only)")
    model = models.CharField(max_length=200, blank=True, help_text=(
        "OpenAI-compatible: the model name the server expects. Local: empty for the default model, or the "
        "absolute path of a checkpoint folder (a training run's final/) on the worker machine."))
    script_path = models.CharField(
        max_length=500, blank=True, help_text="Scripted route only: path of the JSON script on the worker machine."
    )
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of the environment variable holding the key, e.g. OPENAI_API_KEY. Never the key.",
    )
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_checked_at = models.DateTimeField(null=True, blank=True)
    last_check_ok = models.BooleanField(null=True)
    last_check_message = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    @property
    def policy_spec(self) -> str:
        """The spec harness.policies.make_policy understands."""
        if self.route == self.OPENAI:
            return f"openai:{self.base_url}:{self.model}"
        if self.route == self.SCRIPTED:
            return f"scripted:{self.script_path}"
        if self.route == self.LOCAL and self.model:
            return f"local:{self.model}"
        return self.route
