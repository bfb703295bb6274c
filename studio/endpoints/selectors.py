"""Reads for model endpoints."""

from __future__ import annotations

from django.db.models import QuerySet

from studio.endpoints.models import EndpointSecret, ModelEndpoint, RoleEndpoint


def endpoint_list() -> QuerySet[ModelEndpoint]:
    return ModelEndpoint.objects.select_related("api_key_secret")


def endpoint_default() -> ModelEndpoint | None:
    """The endpoint forms pre-select: the shipped demo adapter where it is registered, else the
    local base model, else the first by name. A user can always pick another."""
    from studio.endpoints.services import DEMO_ADAPTER_ENDPOINT_NAME, LOCAL_ENDPOINT_NAME

    for name in (DEMO_ADAPTER_ENDPOINT_NAME, LOCAL_ENDPOINT_NAME):
        if endpoint := ModelEndpoint.objects.filter(name=name).first():
            return endpoint
    return ModelEndpoint.objects.order_by("name").first()


def endpoint_serving(*, model_dir: str) -> ModelEndpoint | None:
    """The local-route endpoint that serves the model folder ``model_dir``, if one was made."""
    return ModelEndpoint.objects.filter(route=ModelEndpoint.LOCAL, model=model_dir).first()


def role_endpoints() -> list[tuple[str, str, ModelEndpoint | None]]:
    """Each model role the studio assigns (role, label, its endpoint or None), in
    ``RoleEndpoint.ROLES`` order."""
    chosen = {row.role: row.endpoint for row in RoleEndpoint.objects.select_related("endpoint")}
    return [(role, label, chosen.get(role)) for role, label in RoleEndpoint.ROLES]


def role_endpoint(*, role: str) -> ModelEndpoint | None:
    """The endpoint chosen for ``role``, or None."""
    row = RoleEndpoint.objects.select_related("endpoint").filter(role=role).first()
    return row.endpoint if row else None


def endpoint_get(*, endpoint_id: int) -> ModelEndpoint:
    """One endpoint (``ModelEndpoint.DoesNotExist`` when there is none)."""
    return ModelEndpoint.objects.get(pk=endpoint_id)


def secret_names() -> list[str]:
    """The names of every endpoint secret (what an endpoint's key field may name)."""
    return list(EndpointSecret.objects.values_list("name", flat=True))


def secret_list() -> QuerySet[EndpointSecret]:
    """Every endpoint secret with the endpoints that use it."""
    return EndpointSecret.objects.prefetch_related("endpoints")


def secret_get(*, secret_id: int) -> EndpointSecret:
    """One endpoint secret (``EndpointSecret.DoesNotExist`` when there is none)."""
    return EndpointSecret.objects.get(pk=secret_id)
