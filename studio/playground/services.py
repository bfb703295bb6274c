"""Playground: validate a request, start the run job, and run it in the worker."""

from __future__ import annotations

import json
from typing import Any

from django.contrib.auth.models import User

from studio.endpoints.models import ModelEndpoint
from studio.endpoints.services import api_key_from_env
from studio.harnesses.models import HarnessVersion
from studio.harnesses.selectors import version_files
from studio.jobs.models import Job
from studio.jobs.services import job_create


class PlaygroundError(ValueError):
    """The request cannot be run; the message names the field and what is valid."""


def playground_request_parse(*, text: str) -> dict[str, Any]:
    """Parse and validate a request's JSON with the runtime's own validation."""
    from harness.livestream import DocumentValidationError, Request, demo_catalogue

    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise PlaygroundError(f"request: line {error.lineno} column {error.colno}: invalid JSON ({error.msg})") from None
    try:
        Request.from_dict(data, source="request", catalogue=demo_catalogue())
    except DocumentValidationError as error:
        raise PlaygroundError(str(error)) from None
    return data


def playground_run_start(
    *, version: HarnessVersion, endpoint: ModelEndpoint, request: dict[str, Any], actor: User
) -> Job:
    first = request.get("comments", [{}])[0]
    comment = first.get("text", "") if isinstance(first, dict) else str(first)
    return job_create(
        kind="playground_run",
        title=f"Playground: {version} with {endpoint.name}: {comment[:60]}",
        params={"version_id": version.pk, "endpoint_id": endpoint.pk, "request": request},
        created_by=actor,
    )


def policy_for_endpoint(endpoint: ModelEndpoint):
    """Build the runtime policy an endpoint names; its key comes from the worker's environment."""
    from harness.policies import make_policy

    if endpoint.route == ModelEndpoint.OPENAI:
        from harness.policies.openai_chat import OpenAIChatPolicy


        return OpenAIChatPolicy(base_url=endpoint.base_url, model=endpoint.model, api_key=api_key_from_env(endpoint))
    return make_policy(endpoint.policy_spec)


def playground_run(*, version_id: int, endpoint_id: int, request: dict[str, Any], progress) -> dict[str, Any]:
    """Run one request under a version with an endpoint's policy; returns the trajectory as JSON."""
    from harness.livestream import demo_catalogue
    from harness.mcp_registry import McpRegistryError, McpServerRefused
    from harness.runtime import Agent
    from studio.harnesses.bundles import bundle_load
    from studio.jobs.registry import JobFailed
    from studio.mcpservers.selectors import mcp_registry

    version = HarnessVersion.objects.select_related("harness").get(pk=version_id)
    endpoint = ModelEndpoint.objects.get(pk=endpoint_id)
    progress(10, f"loading {version} and policy {endpoint.name} ({endpoint.policy_spec})")
    bundle = bundle_load(version_files(version=version))
    policy = policy_for_endpoint(endpoint)
    progress(30, "running the agent")
    try:
        # the studio's registry only: a server the Harness declares itself is refused before anything starts
        agent = Agent(bundle=bundle, policy=policy, catalogue=demo_catalogue(), mcp_registry=mcp_registry())
    except (McpServerRefused, McpRegistryError) as refused:
        raise JobFailed(str(refused)) from None
    with agent:
        trajectory = agent.run(request)
    progress(95, f"{trajectory.outcome}, routed {trajectory.route}: {trajectory.reply[:120]}")
    return {
        "version": str(version),
        "endpoint": endpoint.name,
        "request": request,
        "prompt_blocks": [{"id": block.id, "title": block.title} for block in bundle.prompt.blocks],
        "trajectory": trajectory.to_dict(),
    }
