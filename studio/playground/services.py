"""Playground: validate a request, start the run job, and run it in the worker.

A request is checked against the catalogue it runs with: the demo catalogue, or
the catalogue of the dataset the operator picks (a dataset case pasted in, or
picked by id, refers to that dataset's products). While the agent runs, each
recorded step is stored on the job as a partial result, so the job page (polled
by htmx) shows the trajectory growing; the finished trajectory replaces it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.contrib.auth.models import User

from evaluation.cases import case_request_data
from studio.endpoints.models import ModelEndpoint
from studio.endpoints.services import policy_for_endpoint
from studio.evolution.models import Dataset, DatasetCase
from studio.harnesses.models import HarnessVersion
from studio.harnesses.selectors import version_files
from studio.jobs.models import Job
from studio.jobs.services import job_create

MAX_REQUEST_CHARS = 256 * 1024
# the request id of a typed comment: no example's or case's, so a scripted endpoint says it cannot
# answer it
COMMENT_REQUEST_ID = "playground-comment"
# progress while the agent runs: from RUN_START % at round 1 up to RUN_END % at the round limit
RUN_START, RUN_END = 30, 90


class PlaygroundError(ValueError):
    """The request cannot be run; the message names the field and what is valid."""


def playground_catalogue(*, dataset: Dataset | None):
    """The catalogue a request runs with: the dataset's, or the demo catalogue."""
    from harness.livestream import demo_catalogue
    from studio.evolution.rows import catalogue_for

    return catalogue_for(dataset) if dataset is not None else demo_catalogue()


def playground_case_request(*, dataset: Dataset, case_id: str) -> dict[str, Any]:
    """The request of one case of ``dataset``; PlaygroundError names the dataset when it has no such
    case."""
    case = DatasetCase.objects.filter(dataset=dataset, case_id=case_id.strip()).only("data").first()
    if case is None:
        raise PlaygroundError(
            f"case: dataset {dataset.name} has no case {case_id.strip()!r}; "
            f"its cases are listed on the dataset's page"
        )
    return case_request_data(case.data)


def playground_request_parse(
    *, text: str, dataset: Dataset | None = None, comment: str = ""
) -> dict[str, Any]:
    """Parse and validate a request's JSON (or a whole case's) against the catalogue it runs with.

    ``comment`` replaces the request's comments with one viewer comment (and its id with
    COMMENT_REQUEST_ID).
    """
    from harness.livestream import DocumentValidationError, Request
    from harness.userfiles import parse_json

    if len(text) > MAX_REQUEST_CHARS:
        raise PlaygroundError(
            f"request: {len(text) // 1024} KiB of JSON; a request may hold at most "
            f"{MAX_REQUEST_CHARS // 1024} KiB"
        )
    data = (
        parse_json(text, source="request", what="request", error=PlaygroundError)
        if text.strip()
        else {}
    )
    if isinstance(data, dict) and "gold" in data:  # a whole case pasted in: run its request
        data = case_request_data(data)
    if comment.strip() and isinstance(data, dict):
        data = {
            **data,
            "id": COMMENT_REQUEST_ID,
            "mode": "single",
            "comments": [{"user": "viewer", "text": comment.strip()}],
        }
    catalogue = playground_catalogue(dataset=dataset)
    try:
        Request.from_dict(data, source="request", catalogue=catalogue)
    except DocumentValidationError as error:
        message = str(error)
        if dataset is None and isinstance(data, dict) and isinstance(data.get("id"), str):
            owners = list(
                DatasetCase.objects.filter(case_id=data["id"]).values_list(
                    "dataset__name", flat=True
                )[:3]
            )
            if owners:
                message += (
                    f" (checked against the demo catalogue; case {data['id']} is in dataset "
                    f"{', '.join(owners)}: choose it as the catalogue)"
                )
        raise PlaygroundError(message) from None
    return data


def playground_endpoint_check(*, endpoint: ModelEndpoint, request: dict[str, Any]) -> None:
    """A scripted endpoint must have outputs for the request: say in one line which requests it
    answers."""
    from harness.policies import ScriptedPolicy

    if endpoint.route != ModelEndpoint.SCRIPTED:
        return
    from studio.playground.examples import example_scripts

    try:
        policy = policy_for_endpoint(endpoint=endpoint)
    except (ValueError, TypeError):
        return  # the script is read where it runs (the worker); its job says what is wrong with it
    request_id = str(request.get("id") or "request")
    if (
        isinstance(policy, ScriptedPolicy)
        and isinstance(policy.script, dict)
        and request_id not in policy.script
        and request_id not in example_scripts()
    ):
        raise PlaygroundError(
            f"endpoint: {endpoint.name} replays a script with "
            f"no outputs for request {request_id!r}; it answers "
            f"the {len(example_scripts())} example requests and "
            f"{policy.answers()}. Pick an example request or "
            "a case of the script's dataset, or a model endpoint"
        )


def _with_example_scripts(policy):
    """A scripted endpoint keyed by request id also answers the example requests, with their gold
    scripts."""
    from harness.policies import ScriptedPolicy
    from studio.playground.examples import example_scripts

    if isinstance(policy, ScriptedPolicy) and isinstance(policy.script, dict):
        return ScriptedPolicy({**example_scripts(), **policy.script}, name=policy.name)
    return policy


#: The longest exploratory budget a playground run may ask for, in seconds.
MAX_EXPLORATORY_BUDGET_S = 300


def playground_budget(*, value: str) -> int | None:
    """An exploratory budget typed in the form: None when empty (the Harness's own budget), else
    whole seconds from 1 to MAX_EXPLORATORY_BUDGET_S; anything else is a PlaygroundError naming the
    field."""
    from harness.numbers import decimal_int

    value = (value or "").strip()
    if not value:
        return None
    seconds = decimal_int(value, max_digits=6)
    if seconds is None or not 1 <= seconds <= MAX_EXPLORATORY_BUDGET_S:
        raise PlaygroundError(
            f"budget_s: {value[:20]!r} is not a whole number of seconds from 1 to "
            f"{MAX_EXPLORATORY_BUDGET_S}; leave it empty for the Harness's own budget"
        )
    return seconds


def playground_run_start(
    *,
    version: HarnessVersion | None,
    endpoint: ModelEndpoint,
    request: dict[str, Any],
    actor: User,
    dataset: Dataset | None = None,
    draft=None,
    budget_s: int | None = None,
) -> Job:
    """The run job of one request. With ``draft`` (an open editor draft) the agent runs the draft's
    files as they are now (kept in the job, so a later edit does not change what was tried), not a
    version. With ``budget_s`` the run is exploratory: the agent gets that trajectory budget instead
    of the Harness's own, to see what a slow model would have said; its pages say so, and no score
    reads it (playground runs feed no evaluation, gate or dashboard)."""
    playground_endpoint_check(endpoint=endpoint, request=request)
    first = request.get("comments", [{}])[0]
    comment = first.get("text", "") if isinstance(first, dict) else str(first)
    on = f" on {dataset.name}" if dataset is not None else ""
    params = {
        "endpoint_id": endpoint.pk,
        "request": request,
        "dataset_id": dataset.pk if dataset is not None else None,
    }
    if draft is not None:
        version = draft.base_version
        label = f"draft #{draft.pk} (revision {draft.revision}, from {version})"
        params.update(draft_id=draft.pk, draft_label=label, files=dict(draft.files))
    else:
        label = str(version)
    if budget_s is not None:
        params["budget_s"] = budget_s
        on += f" (exploratory budget {budget_s} s)"
    return job_create(
        kind="playground_run",
        title=f"Playground: {label} with {endpoint.name}{on}: {comment[:60]}",
        params={"version_id": version.pk, **params},
        created_by=actor,
    )


def playground_steps_store(*, job_id: int, result: dict[str, Any]) -> None:
    """Keep the steps so far as the running job's result (the job page shows them while it
    polls)."""
    Job.objects.filter(pk=job_id, status=Job.RUNNING).update(result=result)


def playground_run(
    *,
    version_id: int,
    endpoint_id: int,
    request: dict[str, Any],
    progress,
    dataset_id: int | None = None,
    steps: Callable[[dict[str, Any]], None] | None = None,
    files: dict[str, str] | None = None,
    draft_label: str = "",
    budget_s: int | None = None,
) -> dict[str, Any]:
    """Run one request under a version with an endpoint's policy; returns the trajectory as JSON.

    ``steps`` receives the partial result (``"partial": True``) each time a step is recorded;
    ``progress`` is reported with it, so a cancel request stops the run at its next step.
    """
    from harness.mcp_registry import McpRegistryError, McpServerRefused
    from studio.harnesses.bundles import bundle_load
    from studio.jobs.registry import JobFailed

    version = HarnessVersion.objects.select_related("harness").get(pk=version_id)
    endpoint = ModelEndpoint.objects.get(pk=endpoint_id)
    dataset = Dataset.objects.filter(pk=dataset_id).first() if dataset_id else None
    if dataset_id and dataset is None:
        raise JobFailed(f"dataset #{dataset_id} was deleted; its catalogue is gone")
    shown = draft_label or str(version)
    progress(
        10,
        f"loading {shown} and policy {endpoint.name} ({endpoint.policy_spec})"
        + (f" with the catalogue of {dataset.name}" if dataset else ""),
    )
    try:
        bundle = bundle_load(files if files is not None else version_files(version=version))
    except ValueError as error:  # a draft the editor would not commit either
        raise JobFailed(f"{shown} does not load: {error}") from None
    policy = _with_example_scripts(policy_for_endpoint(endpoint=endpoint))
    head = {
        "version": shown,
        "endpoint": endpoint.name,
        "dataset": dataset.name if dataset else None,
        "request": request,
        "prompt_blocks": [{"id": block.id, "title": block.title} for block in bundle.prompt.blocks],
    }
    if budget_s is not None:  # an exploratory run: the page says whose budget it ran under
        head["exploratory_budget_s"] = budget_s
        head["harness_budget_s"] = bundle.prompt.trajectory_budget_s

    def on_step(trajectory) -> None:
        if steps is not None:
            steps({**head, "partial": True, "trajectory": trajectory.to_dict()})
        share = min(1.0, trajectory.rounds / max(1, agent.max_rounds))
        progress(round(RUN_START + (RUN_END - RUN_START) * share))

    progress(RUN_START, "running the agent")
    try:
        agent = _agent(
            bundle=bundle, policy=policy, dataset=dataset, on_step=on_step, budget_s=budget_s
        )
    except (McpServerRefused, McpRegistryError) as refused:
        raise JobFailed(str(refused)) from None
    with agent:
        trajectory = agent.run(request)
    progress(95, f"{trajectory.outcome}, routed {trajectory.route}: {trajectory.reply[:120]}")
    return {**head, "trajectory": trajectory.to_dict()}


def _agent(*, bundle, policy, dataset: Dataset | None, on_step=None, budget_s: int | None = None):
    """The agent a playground run uses: the studio's MCP registry only (a server the Harness
    declares itself is refused before anything starts) and the run's catalogue."""
    from harness.runtime import Agent
    from studio.mcpservers.selectors import mcp_registry

    return Agent(
        bundle=bundle,
        policy=policy,
        catalogue=playground_catalogue(dataset=dataset),
        mcp_registry=mcp_registry(),
        on_step=on_step,
        trajectory_budget_s=budget_s,
    )


def playground_warm_up() -> str:
    """Prefill what every request's first call starts with, the version at production's system
    prompt, into the default endpoint's local model (``Agent.warm_up`` on the default example), so
    this process's first playground request does not pay for it within its budget. A Celery worker
    process does this once when it starts, where ``settings.WARM_UP_WORKER`` says so. Only a local
    endpoint is warmed (a remote one is another server's business); returns what was done, in one
    line."""
    import time

    from studio.endpoints.selectors import endpoint_default
    from studio.harnesses.bundles import bundle_load
    from studio.harnesses.selectors import version_default
    from studio.playground.examples import DEFAULT_EXAMPLE, example_request

    endpoint, version = endpoint_default(), version_default()
    if endpoint is None or version is None:
        return "nothing to warm: no endpoint or no version at production yet"
    if endpoint.route != ModelEndpoint.LOCAL:
        return f"not warmed: {endpoint.name} is not a local model"
    started = time.perf_counter()
    bundle = bundle_load(version_files(version=version))
    with _agent(
        bundle=bundle, policy=policy_for_endpoint(endpoint=endpoint), dataset=None
    ) as agent:
        output = agent.warm_up(example_request(name=DEFAULT_EXAMPLE))
    return (
        f"warmed {endpoint.name} on {version}: {output.input_tokens} prompt tokens in "
        f"{time.perf_counter() - started:.1f} s"
    )
