"""A model endpoint: a named policy route, and the endpoint secret (registered by an admin) holding
its key.

An endpoint never names a variable of the worker's environment: an ML engineer who could would send
``REDIS_URL`` or ``SECRET_KEY`` to a server of their own as a bearer token. Keys are
``EndpointSecret`` rows, registered by admins for that purpose (as MCP servers are), and an endpoint
references one by name; the value is read on the worker that calls the endpoint and never shown.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class EndpointSecret(models.Model):
    """An API key endpoints may send, registered by an admin: a stored value, or the name of a
    variable of the workers' environment the admin chose for it. Never rendered back, never in the
    audit log.

    A secret is bound to the origins (scheme, host, port) it was made for: an endpoint whose URL is
    elsewhere cannot send it. A stored value is encrypted at rest
    (``studio/endpoints/crypto.py``)."""

    name = models.SlugField(
        max_length=64, unique=True, help_text="What an endpoint's key field names."
    )
    value = models.TextField(
        blank=True,
        help_text=("The key itself, stored encrypted (fernet:...; write-only: no page shows it)."),
    )
    allowed_origins = models.TextField(
        blank=True,
        help_text=(
            "The origins this key may be sent to, one per line, as scheme://host:port (e.g. "
            "https://api.openai.com:443); an endpoint "
            "elsewhere cannot name it. Empty: sent nowhere."
        ),
    )
    from_env = models.CharField(
        max_length=100,
        blank=True,
        help_text=(
            "Or: the name of the workers' environment "
            "variable that holds the key (chosen by an admin)."
        ),
    )
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        from studio.endpoints.crypto import encrypt

        self.value = encrypt(self.value)  # a plain value never reaches the database
        super().save(*args, **kwargs)

    def plain_value(self) -> str:
        """The stored key, decrypted (on the process that sends it); SecretUnreadable saying why
        not."""
        from studio.endpoints.crypto import decrypt

        return decrypt(self.value)

    @property
    def origins(self) -> list[str]:
        return [line.strip() for line in self.allowed_origins.splitlines() if line.strip()]

    @property
    def source(self) -> str:
        """Where the key comes from, in words, without the key."""
        return f"the workers' variable {self.from_env}" if self.from_env else "stored in the studio"


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
    base_url = models.URLField(
        blank=True, help_text="e.g. http://127.0.0.1:8001/v1 (OpenAI-compatible only)"
    )
    model = models.CharField(
        max_length=200,
        blank=True,
        help_text=(
            "OpenAI-compatible: the model name the server "
            "expects. Local: empty for the default model, or the "
            "absolute path of a checkpoint folder (a training run's final/) on the worker machine."
        ),
    )
    script_path = models.CharField(
        max_length=500,
        blank=True,
        help_text="Scripted route only: path of the JSON script on the worker machine.",
    )
    api_key_secret = models.ForeignKey(
        EndpointSecret,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="endpoints",
        help_text="The endpoint secret (registered by an admin) "
        "sent as the bearer key; empty: no key.",
    )
    description = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    saved_by_admin = models.BooleanField(
        default=False,
        help_text=(
            "Last saved by an admin (or the setup commands): only such an endpoint may call a "
            "loopback or private address (studio.endpoints.services.endpoint_address_problem)."
        ),
    )
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


class RoleEndpoint(models.Model):
    """Which endpoint a model role calls in the studio (``harness.policies.roles``): the judge a
    calibration's bare ``llm`` spec names, the diagnoser an evolution's form pre-selects. No row:
    the role has no endpoint chosen, and the studio behaves as before (a judge spec names its
    server; the form asks)."""

    JUDGE = "judge"
    DIAGNOSER = "diagnoser"
    ROLES = [
        (JUDGE, "judge (LLM judge: a calibration's judge spec 'llm')"),
        (DIAGNOSER, "diagnoser (LLM diagnoser: pre-selected on a new evolution)"),
    ]

    role = models.CharField(max_length=20, choices=ROLES, unique=True)
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.PROTECT, related_name="roles")
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["role"]

    def __str__(self) -> str:
        return f"{self.role}: {self.endpoint.name}"
