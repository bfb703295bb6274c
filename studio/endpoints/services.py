"""Writes for model endpoints and their secrets: create/update, the connection test a job runs, the
policy an endpoint names, and the key it sends.

An endpoint's key is an ``EndpointSecret`` an admin registered (``endpoint_secret_save``), named by
the endpoint; ``endpoint_api_key`` reads it on the process that calls the endpoint (the worker). No
field an ML engineer fills names a variable of the worker's environment, and no page, audit event or
job log shows a key (docs/security.md, "Endpoint keys").
"""

from __future__ import annotations

import ipaddress
import os
import re
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from harness.checkpoints import checkpoint_problem
from harness.model_cache import default_model_dir, tiny_model_dir
from harness.policies.base import Policy
from harness.policies.roles import RoleModel
from serving.endpoint import probe_models
from studio.audit.services import audit_record
from studio.endpoints.crypto import SecretUnreadable
from studio.endpoints.models import EndpointSecret, ModelEndpoint, RoleEndpoint
from studio.jobs.models import Job
from studio.jobs.services import job_create

ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]{0,99}$")
LOCAL_ENDPOINT_NAME = "local-default"
DEMO_ADAPTER_ENDPOINT_NAME = "demo-adapter"
_BUILT_IN_MODELS = (
    "leave empty for the built-in SmolLM2-135M-Instruct (the tiny route is the built-in "
    "2-layer test model)"
)


class EndpointError(ValueError):
    """A field of an endpoint is not valid; the message names it."""


_DEFAULT_PORTS = {"http": 80, "https": 443}


def url_origin(*, url: str) -> str | None:
    """``scheme://host:port`` of an http(s) URL, the port always written (so :443 and no port
    agree); None for anything else."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme, host = parts.scheme.lower(), (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host or parts.username or parts.password:
        return None
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port or _DEFAULT_PORTS[scheme]}"


def _parse_origins(text: str) -> tuple[list[str], list[str]]:
    """(origins, errors) of the allowed_origins field: one origin per line, or comma-separated."""
    origins, errors = [], []
    for item in (part.strip() for line in text.splitlines() for part in line.split(",")):
        if not item:
            continue
        origin = url_origin(url=item)
        if origin is None or urlsplit(item).path.strip("/") or urlsplit(item).query:
            errors.append(
                f"allowed_origins: {item!r} is not an origin; write scheme://host:port, e.g. "
                "https://api.openai.com:443 or http://10.0.0.5:8001 (no path)"
            )
        elif origin not in origins:
            origins.append(origin)
    return origins, errors


def secret_origin_problem(*, secret: EndpointSecret, url: str) -> str | None:
    """Why the secret may not be sent to ``url`` (not one of the origins an admin bound it to), or
    None."""
    origin = url_origin(url=url) or url
    if origin in secret.origins:
        return None
    bound = ", ".join(secret.origins) or "no host yet"
    return (
        f"api_key_secret: endpoint secret {secret.name} "
        f"may be sent only to {bound}, not to {origin}; "
        "an admin adds that origin on the secret's page, or choose another secret"
    )


def url_private_addresses(*, url: str) -> list[str]:
    """The addresses of the URL's host that are not public (loopback, private, link-local, shared,
    reserved, unspecified: ``ipaddress``'s ``is_global`` false), as the host is written or resolves
    now; [] for a public host, or one that does not resolve (nothing can be sent to it then)."""
    try:
        host = urlsplit(url.strip()).hostname
    except ValueError:
        return []
    if not host:
        return []
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError, ValueError):
        return []
    private = set()
    for info in infos:
        address = str(info[4][0]).split("%")[0]
        try:
            parsed = ipaddress.ip_address(address)
        except ValueError:
            continue
        if getattr(parsed, "ipv4_mapped", None):
            parsed = parsed.ipv4_mapped
        if not parsed.is_global:
            private.add(str(parsed))
    return sorted(private)


def _is_admin(actor: User | None) -> bool:
    """An admin, or no person (the setup commands, seeding and migrations act without one)."""
    from studio.accounts.roles import ADMIN, user_roles

    return actor is None or ADMIN in user_roles(actor)


def _private_url_problem(url: str, *, allowed: bool, field: str = "base_url") -> str | None:
    if allowed or not (private := url_private_addresses(url=url)):
        return None
    return (
        f"{field}: {url_origin(url=url) or url} is a loopback or private address "
        f"({', '.join(private[:3])}); only an endpoint an admin saves may call one (an admin "
        "registers it on the Endpoints page); anyone else registers a public server"
    )


def endpoint_address_problem(*, endpoint: ModelEndpoint) -> str | None:
    """Why the studio may not call this endpoint's server now, or None: an OpenAI-compatible
    endpoint whose host is (or now resolves to) a loopback or private address, and that no admin
    saved. Checked where the call is made (the worker), as well as on save: a name may resolve
    elsewhere later."""
    if endpoint.route != ModelEndpoint.OPENAI:
        return None
    problem = _private_url_problem(endpoint.base_url, allowed=endpoint.saved_by_admin)
    return f"endpoint {endpoint.name}: {problem}; nothing was sent" if problem else None


def _validate(
    *, name: str, route: str, base_url: str, model: str, api_key_secret: str, script_path: str
) -> list[str]:
    errors = []
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", name):
        errors.append(
            "name: 1-64 of a-z, 0-9, '-', '_' starting with a letter or digit (e.g. sglang-gpu)"
        )
    if route not in dict(ModelEndpoint.ROUTES):
        errors.append(f"route: choose one of {', '.join(dict(ModelEndpoint.ROUTES))}")
    if route == ModelEndpoint.OPENAI:
        if not re.match(r"^https?://", base_url):
            errors.append(
                "base_url: an http(s) URL of an OpenAI-compatible "
                "server, e.g. http://127.0.0.1:8001/v1"
            )
        if not model.strip():
            errors.append("model: the model name the server expects, e.g. Qwen/Qwen3-8B")
    secret = EndpointSecret.objects.filter(name=api_key_secret).first() if api_key_secret else None
    if api_key_secret and secret is None:
        registered = (
            ", ".join(EndpointSecret.objects.values_list("name", flat=True)[:20]) or "none yet"
        )
        errors.append(
            "api_key_secret: not a registered endpoint secret "
            f"(registered: {registered}): choose one an "
            "admin registered, or leave it empty for no key (never a key or a variable name)"
        )
    elif (
        secret is not None
        and route == ModelEndpoint.OPENAI
        and (problem := secret_origin_problem(secret=secret, url=base_url))
    ):
        errors.append(problem)
    if route == ModelEndpoint.LOCAL and model:
        if not model.startswith("/"):
            errors.append(
                "model: for the local route, leave empty for "
                "the default model or give the absolute path "
                "of a checkpoint folder on the worker machine, e.g. /srv/runs/hsa-sft/final"
            )
        elif problem := checkpoint_problem(Path(model)):
            errors.append(
                f"model: {problem}; give the absolute path of an existing checkpoint folder with "
                "config.json and weights (a training run's final/), "
                "a LoRA adapter folder (models/demo-adapter), "
                f"or {_BUILT_IN_MODELS}"
            )
    if route == ModelEndpoint.SCRIPTED:
        if not script_path:
            errors.append("script_path: the path of a JSON script file (a list of model outputs)")
        elif problem := _script_problem(script_path):
            errors.append(f"script_path: {problem}")
    return errors


def _script_problem(path: str) -> str | None:
    """Why the file is not a policy script the scripted route can replay, or None."""
    from harness.policies.scripted import ScriptedPolicy

    try:
        ScriptedPolicy.load(path)
    except (ValueError, TypeError) as error:  # TypeError: JSON of the wrong shape
        return str(error)
    return None


def endpoint_save(
    *,
    endpoint: ModelEndpoint | None,
    name: str,
    route: str,
    base_url: str,
    model: str,
    description: str,
    actor: User | None,
    api_key_secret: str = "",
    script_path: str = "",
) -> ModelEndpoint:
    """Create or update an endpoint after validating every field; ``api_key_secret`` names an
    endpoint secret."""
    name, base_url, model, api_key_secret = (
        name.strip(),
        base_url.strip(),
        model.strip(),
        api_key_secret.strip(),
    )
    script_path = script_path.strip()
    errors = _validate(
        name=name,
        route=route,
        base_url=base_url,
        model=model,
        api_key_secret=api_key_secret,
        script_path=script_path,
    )
    clash = (
        ModelEndpoint.objects.filter(name=name)
        .exclude(pk=endpoint.pk if endpoint else None)
        .exists()
    )
    if clash:
        errors.append(f"name: an endpoint called {name} already exists")
    if (
        route == ModelEndpoint.OPENAI
        and not errors
        and (problem := _private_url_problem(base_url, allowed=_is_admin(actor)))
    ):
        errors.append(problem)
    if errors:
        raise EndpointError("; ".join(errors))
    created = endpoint is None
    endpoint = endpoint or ModelEndpoint(created_by=actor)
    endpoint.name, endpoint.route, endpoint.description = name, route, description.strip()
    endpoint.base_url = base_url if route == ModelEndpoint.OPENAI else ""
    endpoint.model = model if route in (ModelEndpoint.OPENAI, ModelEndpoint.LOCAL) else ""
    endpoint.script_path = script_path if route == ModelEndpoint.SCRIPTED else ""
    endpoint.saved_by_admin = _is_admin(actor)
    endpoint.api_key_secret = (
        EndpointSecret.objects.get(name=api_key_secret) if api_key_secret else None
    )
    endpoint.save()
    audit_record(
        actor=actor,
        action="endpoint.create" if created else "endpoint.update",
        target=f"endpoint {endpoint.name}",
        data={
            "route": route,
            "base_url": endpoint.base_url,
            "model": endpoint.model,
            "api_key_secret": api_key_secret,
        },
    )
    return endpoint


def endpoint_ensure_local(*, actor: User | None = None) -> ModelEndpoint:
    """The local default model endpoint (created by the setup command; idempotent)."""
    endpoint = ModelEndpoint.objects.filter(name=LOCAL_ENDPOINT_NAME).first()
    if endpoint is not None:
        return endpoint
    return endpoint_save(
        endpoint=None,
        name=LOCAL_ENDPOINT_NAME,
        route=ModelEndpoint.LOCAL,
        base_url="",
        model="",
        description="SmolLM2-135M-Instruct on this machine's "
        "CPU (converted once into the model cache).",
        actor=actor,
    )


def demo_adapter_dir() -> Path:
    """The adapter the repository ships (models/demo-adapter, docs/training.md): the demo's
    model."""
    from django.conf import settings

    return Path(settings.BASE_DIR) / "models" / DEMO_ADAPTER_ENDPOINT_NAME


def endpoint_ensure_demo_adapter(*, actor: User | None = None) -> ModelEndpoint | None:
    """The endpoint serving the shipped demo adapter on this machine's CPU (idempotent; its path
    follows the checkout). None when the checkout has no usable adapter folder."""
    folder = demo_adapter_dir()
    if checkpoint_problem(folder):
        return None
    endpoint = ModelEndpoint.objects.filter(name=DEMO_ADAPTER_ENDPOINT_NAME).first()
    if endpoint is not None:
        if endpoint.route == ModelEndpoint.LOCAL and endpoint.model != str(folder):
            ModelEndpoint.objects.filter(pk=endpoint.pk).update(
                model=str(folder)
            )  # the checkout moved
            endpoint.refresh_from_db()
        return endpoint
    return endpoint_save(
        endpoint=None,
        name=DEMO_ADAPTER_ENDPOINT_NAME,
        route=ModelEndpoint.LOCAL,
        base_url="",
        model=str(folder),
        description=(
            "The demo model: the shipped HSA-SFT LoRA adapter "
            "(models/demo-adapter) on SmolLM2-135M-Instruct, "
            f"on this machine's CPU. {LOCAL_ENDPOINT_NAME} "
            "is the untrained base model, for comparison."
        ),
        actor=actor,
    )


def endpoint_test_start(*, endpoint: ModelEndpoint, actor: User) -> Job:
    return job_create(
        kind="endpoint_test",
        title=f"Test connection: {endpoint.name}",
        params={"endpoint_id": endpoint.pk},
        created_by=actor,
    )


@dataclass
class ConnectionCheck:
    ok: bool
    message: str


def endpoint_api_key(*, endpoint: ModelEndpoint) -> str | None:
    """The key of the endpoint's secret, read on the process that calls the endpoint (the worker):
    the stored value (decrypted), or the workers' variable the admin named; None without a secret or
    when that variable is unset. EndpointError when the endpoint's URL is not an origin the secret
    is bound to (checked here as well as on save: the secret's origins may have changed since) or
    the stored value is unreadable."""
    secret = endpoint.api_key_secret
    if secret is None:
        return None
    if problem := secret_origin_problem(secret=secret, url=endpoint.base_url):
        raise EndpointError(f"endpoint {endpoint.name}: {problem}; nothing was sent")
    if secret.from_env:
        return os.environ.get(secret.from_env) or None
    try:
        return secret.plain_value() or None
    except (SecretUnreadable, ImproperlyConfigured) as error:
        raise EndpointError(f"endpoint secret {secret.name}: {error}") from None


def _endpoint_key(endpoint: ModelEndpoint) -> str | None:
    """What an OpenAI-compatible endpoint sends as its key: its secret's, else the keyless
    placeholder (never the worker's ``$OPENAI_API_KEY``, which the factory sends for a spec given no
    key); None for other routes."""
    from harness.policies.openai_chat import KEYLESS

    return (
        (endpoint_api_key(endpoint=endpoint) or KEYLESS)
        if endpoint.route == ModelEndpoint.OPENAI
        else None
    )


def policy_for_endpoint(*, endpoint: ModelEndpoint) -> Policy:
    """The runtime policy an endpoint names (local, tiny, OpenAI-compatible, scripted), built by the
    one factory (``harness.policies.make_policy``); its key is its endpoint secret's
    (``endpoint_api_key``)."""
    from harness.policies import make_policy

    if problem := endpoint_address_problem(endpoint=endpoint):
        raise EndpointError(problem)
    return make_policy(endpoint.policy_spec, api_key=_endpoint_key(endpoint))


def endpoint_role_model(*, role: str, endpoint: ModelEndpoint) -> RoleModel:
    """The model a role (judge, diagnoser) calls on this endpoint, any route:
    ``harness.policies.role_model`` with the role's timeout, retries and usage record, and the
    endpoint's key."""
    from harness.policies import role_model

    if problem := endpoint_address_problem(endpoint=endpoint):
        raise EndpointError(problem)
    return role_model(role, endpoint.policy_spec, api_key=_endpoint_key(endpoint))


def registry_role_model(*, role: str, target: str, build: bool = True) -> RoleModel:
    """The model a role calls in the studio, from the endpoint registry only: ``target`` empty
    calls the endpoint chosen for the role (``RoleEndpoint``), otherwise ``target`` names a
    registered endpoint. A URL or policy spec typed into a form is refused (EndpointError naming
    what is valid): a model call from the studio goes only to a server the registry holds, where a
    loopback or private address needs an admin's endpoint (``endpoint_address_problem``).
    ``build=False`` checks without building (the job builds it on the worker)."""
    from harness.policies import Policy
    from studio.endpoints.selectors import role_endpoint

    target = target.strip()
    if target:
        endpoint = ModelEndpoint.objects.filter(name=target).first()
        if endpoint is None:
            known = (
                ", ".join(ModelEndpoint.objects.values_list("name", flat=True)[:20]) or "none yet"
            )
            raise EndpointError(
                f"{target[:80]!r} is not a registered endpoint (endpoints: {known}); in the studio "
                f"a {role} calls an endpoint of the Endpoints page, never a URL"
            )
    else:
        endpoint = role_endpoint(role=role)
        if endpoint is None:
            raise EndpointError(
                f"no endpoint is chosen for the {role} role: an ML engineer chooses one on the "
                "Endpoints page"
            )
    if problem := endpoint_address_problem(endpoint=endpoint):
        raise EndpointError(problem)
    if not build:
        return RoleModel(role=role, policy=Policy(), label=endpoint.name)
    return endpoint_role_model(role=role, endpoint=endpoint)


def role_endpoint_set(*, role: str, endpoint_name: str, actor: User | None) -> RoleEndpoint | None:
    """Choose the endpoint a model role calls (``endpoint_name`` empty: none, the studio's behaviour
    without one); EndpointError naming the field and what is valid."""
    roles = dict(RoleEndpoint.ROLES)
    if role not in roles:
        raise EndpointError(f"role: {role!r} is not one of {', '.join(roles)}")
    endpoint_name = endpoint_name.strip()
    endpoint = ModelEndpoint.objects.filter(name=endpoint_name).first() if endpoint_name else None
    if endpoint_name and endpoint is None:
        known = ", ".join(ModelEndpoint.objects.values_list("name", flat=True)[:20]) or "none yet"
        raise EndpointError(
            f"endpoint: no endpoint called {endpoint_name!r} (endpoints: {known}); "
            "or leave it empty for none"
        )
    audit_record(
        actor=actor,
        action="endpoint.role",
        target=f"model role {role}",
        data={"endpoint": endpoint.name if endpoint else ""},
    )
    if endpoint is None:
        RoleEndpoint.objects.filter(role=role).delete()
        return None
    chosen, _ = RoleEndpoint.objects.update_or_create(
        role=role, defaults={"endpoint": endpoint, "updated_by": actor}
    )
    return chosen


def endpoint_check(*, endpoint: ModelEndpoint, timeout_s: float = 10.0) -> ConnectionCheck:
    """Check that the endpoint answers: GET /models for OpenAI-compatible, the model files for
    local.

    Every failure is one sentence for the endpoint list and the job page; nothing here raises.
    """
    started = time.perf_counter()
    if endpoint.route == ModelEndpoint.OPENAI:
        return _check_openai(endpoint, timeout_s=timeout_s, started=started)
    if endpoint.route == ModelEndpoint.SCRIPTED:
        problem = _script_problem(endpoint.script_path)
        if problem:
            return ConnectionCheck(False, problem)
        return ConnectionCheck(True, f"script {endpoint.script_path} reads as a policy script")
    if endpoint.model:
        directory = Path(endpoint.model)
    else:
        try:
            directory = (
                tiny_model_dir() if endpoint.route == ModelEndpoint.TINY else default_model_dir()
            )
        except Exception as error:  # making the built-in model: a missing package, a full disk, ...
            return ConnectionCheck(
                False, f"the built-in model is not available on the worker: {error}"
            )
    problem = checkpoint_problem(directory)
    if problem:
        return ConnectionCheck(False, problem)
    return ConnectionCheck(
        True, f"model files ready in {directory} ({time.perf_counter() - started:.2f} s)"
    )


def _check_openai(endpoint: ModelEndpoint, *, timeout_s: float, started: float) -> ConnectionCheck:
    if problem := endpoint_address_problem(endpoint=endpoint):
        return ConnectionCheck(False, problem)
    try:
        key = endpoint_api_key(endpoint=endpoint)
    except EndpointError as error:
        return ConnectionCheck(False, str(error))
    if endpoint.api_key_secret is not None and key is None:
        return ConnectionCheck(
            False,
            f"endpoint secret {endpoint.api_key_secret.name} has no key on this worker "
            "(its variable is not set here); an admin checks it on the Secrets page",
        )
    probe = probe_models(
        base_url=endpoint.base_url, api_key=key, timeout_s=timeout_s, started=started
    )
    url, elapsed, names = probe.url, probe.elapsed_s, probe.names
    if probe.error:
        return ConnectionCheck(False, f"GET {url}: {probe.error}")
    if probe.status != 200:
        return ConnectionCheck(False, f"GET {url}: HTTP {probe.status} after {elapsed:.2f} s")
    if probe.problem:
        return ConnectionCheck(False, f"GET {url}: {probe.problem}")
    if endpoint.model and endpoint.model not in names:
        return ConnectionCheck(
            False,
            f"the server answers but does not list model {endpoint.model!r}; it lists {names[:10]}",
        )
    return ConnectionCheck(True, f"GET {url}: {len(names)} model(s) in {elapsed:.2f} s")


def endpoint_record_check(*, endpoint: ModelEndpoint, check: ConnectionCheck) -> None:
    ModelEndpoint.objects.filter(pk=endpoint.pk).update(
        last_checked_at=timezone.now(),
        last_check_ok=check.ok,
        last_check_message=check.message[:2000],
    )


# -- endpoint secrets (admins only)
# -------------------------------------------------------------------------

MAX_SECRET_CHARS = 4096


def endpoint_secret_save(
    *,
    secret: EndpointSecret | None,
    name: str,
    value: str,
    from_env: str,
    description: str,
    actor: User | None,
    allowed_origins: str = "",
) -> EndpointSecret:
    """Register or change an endpoint secret: a stored value or the name of a workers' variable, not
    both, and the origins (scheme://host:port) it may be sent to. Editing with an empty value keeps
    the stored one (a value is never put back into a form). The audit event names the secret, where
    its key comes from and its origins, never the key."""
    name, from_env, description = name.strip(), from_env.strip(), description.strip()
    value = value.strip()
    origins, errors = _parse_origins(allowed_origins)
    if not origins and not errors:
        errors.append(
            "allowed_origins: the origins this key may be "
            "sent to, one per line as scheme://host:port "
            "(e.g. https://api.openai.com:443); an endpoint elsewhere cannot send it"
        )
    if not re.fullmatch(r"[a-z0-9][a-z0-9_-]{0,63}", name):
        errors.append(
            "name: 1-64 of a-z, 0-9, '-', '_' starting with a letter or digit (e.g. openai-prod)"
        )
    elif (
        EndpointSecret.objects.filter(name=name).exclude(pk=secret.pk if secret else None).exists()
    ):
        errors.append(f"name: a secret called {name} already exists")
    keeps_value = secret is not None and not value and not from_env and bool(secret.value)
    if value and from_env:
        errors.append("value: give either the key or the workers' variable that holds it, not both")
    elif not value and not from_env and not keeps_value:
        errors.append(
            "value: the key, or in from_env the name of "
            "the workers' environment variable holding it"
        )
    if len(value) > MAX_SECRET_CHARS:
        errors.append(f"value: at most {MAX_SECRET_CHARS} characters")
    elif any(ord(c) < 32 or ord(c) == 127 for c in value):
        errors.append("value: one line of printable characters (it is sent in an HTTP header)")
    if from_env and not ENV_NAME.match(from_env):
        errors.append(
            "from_env: the NAME of an environment variable (A-Z, 0-9, _), e.g. OPENAI_API_KEY"
        )
    if errors:
        raise EndpointError("; ".join(errors))
    created = secret is None
    secret = secret or EndpointSecret(created_by=actor)
    value_changed = bool(value) and (not secret.value or value != secret.plain_value())
    secret.name, secret.description, secret.from_env = name, description, from_env
    secret.allowed_origins = "\n".join(origins)
    secret.value = "" if from_env else (value or secret.value)
    try:
        secret.save()  # encrypts the value (EndpointSecret.save)
    except (
        ImproperlyConfigured
    ) as error:  # production without ENDPOINT_SECRETS_KEY: nothing is stored
        raise EndpointError(f"value: the studio cannot encrypt keys: {error}") from None
    audit_record(
        actor=actor,
        action="endpoint_secret.create" if created else "endpoint_secret.update",
        target=f"endpoint secret {secret.name}",
        data={"source": secret.source, "value_changed": value_changed, "allowed_origins": origins},
    )
    return secret


def endpoint_secret_delete(*, secret: EndpointSecret, actor: User | None) -> None:
    """Remove a secret no endpoint names; EndpointError naming the endpoints that still do."""
    users = list(secret.endpoints.values_list("name", flat=True))
    if users:
        raise EndpointError(
            f"endpoint secret {secret.name} is the key of endpoint(s) {', '.join(users)}; "
            "change them first"
        )
    audit_record(
        actor=actor,
        action="endpoint_secret.delete",
        target=f"endpoint secret {secret.name}",
        data={},
    )
    secret.delete()
