"""Every view x every role: allowed roles get through, others get 403, anonymous must sign in.

The table names each URL once; a test fails when a named URL is missing from
it, so a new view cannot ship without its row.
"""

from __future__ import annotations

import json

import pytest
from django.urls import URLPattern, URLResolver, get_resolver
from studio_testing import client_for, edit_skill_rule, token_for

from studio.accounts.roles import PERMISSIONS
from studio.endpoints.models import EndpointSecret, ModelEndpoint
from studio.harnesses.models import DraftConflict
from studio.harnesses.services import (
    draft_create,
    draft_file_save,
    harness_version_create,
    label_move,
)
from studio.jobs.models import Job

pytestmark = pytest.mark.django_db

ROLES = ["operator", "reviewer", "ml_engineer", "admin", "outsider", "anonymous"]
H = "livestream-avatar"
SKILL = "skills/item_qa/SKILL.md"

# (url name, method, path template, permission, data)
MATRIX = [
    ("home", "get", "/", "studio.view", None),
    ("harnesses:harness_import", "get", "/import/", "harness.edit", None),
    ("harnesses:draft_list", "get", "/drafts/", "studio.view", None),
    ("harnesses:harness_detail", "get", f"/h/{H}/", "studio.view", None),
    ("harnesses:harness_history", "get", f"/h/{H}/history/", "studio.view", None),
    ("harnesses:version_detail", "get", f"/h/{H}/v/1/", "studio.view", None),
    ("harnesses:version_export", "get", f"/h/{H}/v/1/export.zip", "studio.view", None),
    ("harnesses:version_diff", "get", f"/h/{H}/diff/?a=1&b=2", "studio.view", None),
    ("harnesses:version_diff_summary", "get", f"/h/{H}/diff/summary/?a=1&b=2", "studio.view", None),
    ("harnesses:draft_edit", "get", "/drafts/{draft}/", "studio.view", None),
    ("harnesses:draft_changes", "get", "/drafts/{draft}/changes/", "studio.view", None),
    ("harnesses:conflict_detail", "get", "/conflicts/{conflict}/", "harness.edit", None),
    (
        "harnesses:draft_preview",
        "post",
        "/drafts/{draft}/preview/",
        "studio.view",
        {"text": "# hi"},
    ),
    (
        "harnesses:draft_save",
        "post",
        "/drafts/{draft}/save/",
        "harness.edit",
        {"path": SKILL, "text": "{skill}", "revision": "{revision}"},
    ),
    (
        "harnesses:draft_skill_add",
        "post",
        "/drafts/{draft}/skills/add/",
        "harness.edit",
        {"name": "x_{role}", "kind": "reply", "description": "d", "revision": "{revision}"},
    ),
    ("harnesses:draft_skill_import", "get", "/drafts/{draft}/skills/import/", "harness.edit", None),
    (
        "harnesses:draft_hook_add",
        "post",
        "/drafts/{draft}/hooks/add/",
        "harness.edit",
        {
            "id": "h-{role}",
            "type": "max_length",
            "event": "stop",
            "params": "{max_chars: 100}",
            "action": "retry",
            "revision": "{revision}",
        },
    ),
    (
        "harnesses:draft_file_delete",
        "post",
        "/drafts/{draft}/files/delete/",
        "harness.edit",
        {"path": "skills/nope/SKILL.md", "revision": "{revision}"},
    ),
    ("harnesses:draft_commit", "post", "/drafts/{draft}/commit/", "harness.edit", {"message": "m"}),
    ("harnesses:draft_discard", "post", "/drafts/{draft}/discard/", "harness.edit", {}),
    ("harnesses:draft_create", "post", f"/h/{H}/drafts/new/", "harness.edit", {"base": "1"}),
    (
        "harnesses:label_move",
        "post",
        f"/h/{H}/labels/move/",
        "label.move",
        {"label": "staging", "version": "{flip}"},
    ),
    (
        "harnesses:label_rollback",
        "post",
        f"/h/{H}/labels/staging/rollback/",
        "label.move",
        {"reason": "r"},
    ),
    ("accounts:token_list", "get", "/accounts/tokens/", "studio.view", None),
    ("accounts:token_revoke", "post", "/accounts/tokens/{token}/revoke/", "studio.view", {}),
    ("jobs:job_list", "get", "/jobs/", "studio.view", None),
    ("jobs:job_detail", "get", "/jobs/{job}/", "studio.view", None),
    ("jobs:job_status", "get", "/jobs/{job}/status/", "studio.view", None),
    # a job nobody in the matrix started: only whoever may cancel any job can (its starter could
    # too)
    ("jobs:job_cancel", "post", "/jobs/{queued_job}/cancel/", "job.cancel_any", {}),
    ("jobs:worker_check_start", "post", "/jobs/worker-check/", "job.diagnose", {"seconds": "0.5"}),
    ("endpoints:endpoint_list", "get", "/endpoints/", "studio.view", None),
    ("endpoints:endpoint_create", "get", "/endpoints/new/", "endpoint.manage", None),
    ("endpoints:endpoint_edit", "get", "/endpoints/{endpoint}/edit/", "endpoint.manage", None),
    ("endpoints:endpoint_test", "post", "/endpoints/{endpoint}/test/", "endpoint.manage", {}),
    (
        "endpoints:role_set",
        "post",
        "/endpoints/roles/",
        "endpoint.manage",
        {"role": "judge", "endpoint": ""},
    ),
    ("endpoints:secret_list", "get", "/endpoints/secrets/", "endpoint_secret.manage", None),
    ("endpoints:secret_create", "get", "/endpoints/secrets/new/", "endpoint_secret.manage", None),
    (
        "endpoints:secret_edit",
        "get",
        "/endpoints/secrets/{secret}/edit/",
        "endpoint_secret.manage",
        None,
    ),
    (
        "endpoints:secret_delete",
        "post",
        "/endpoints/secrets/{secret}/delete/",
        "endpoint_secret.manage",
        {},
    ),
    ("playground:playground", "get", "/playground/", "playground.run", None),
    ("audit:audit_log", "get", "/audit/", "audit.view", None),
    ("training:run_list", "get", "/training/", "training.view", None),
    ("training:run_new", "get", "/training/new/sft/", "training.run", None),
    (
        "training:run_new",
        "post",
        "/training/new/sft/?preset=tiny-smoke",
        "training.run",
        {"preset": "tiny-smoke"},
    ),
    (
        "training:run_preview",
        "post",
        "/training/new/sft/preview/",
        "training.run",
        {"max_steps": "3"},
    ),
    ("training:run_detail", "get", "/training/runs/{run}/", "training.view", None),
    ("training:run_metrics", "get", "/training/runs/{run}/metrics.json", "training.view", None),
    ("training:run_live", "get", "/training/runs/{run}/live/", "training.view", None),
    ("training:run_resume", "post", "/training/runs/{stopped_run}/resume/", "training.run", {}),
    ("training:checkpoint_list", "get", "/training/checkpoints/", "training.view", None),
    (
        "training:checkpoint_compare",
        "get",
        "/training/checkpoints/compare/?a={run}&b={stopped_run}",
        "training.view",
        None,
    ),
    (
        "training:checkpoint_endpoint",
        "post",
        "/training/runs/{run}/endpoint/",
        "endpoint.manage",
        {},
    ),
    ("releases:release_list", "get", "/releases/", "release.view", None),
    ("releases:release_new", "get", "/releases/new/", "release.create", None),
    (
        "releases:release_new",
        "post",
        "/releases/new/",
        "release.create",
        {"action": "check", "checkpoint": "{checkpoint}", "harness_version": f"{H}@v1"},
    ),
    ("releases:release_detail", "get", "/releases/{release}/", "release.view", None),
    ("releases:release_manifest", "get", "/releases/{release}/manifest.json", "release.view", None),
    ("releases:release_signing_key", "get", "/releases/signing-key.pem", "release.view", None),
    ("releases:release_refresh", "post", "/releases/{release}/gates/", "release.create", {}),
    (
        "releases:release_decide",
        "post",
        "/releases/{release}/decide/",
        "release.approve",
        {"decision": "reject", "reason": "r"},
    ),
    ("replays:replay_list", "get", "/replay/", "training.view", None),
    ("replays:replay_detail", "get", "/replay/{replay}/", "training.view", None),
    (
        "replays:replay_compare",
        "get",
        "/replay/compare/?a={replay}&b={replay}",
        "training.view",
        None,
    ),
    ("compatibility:matrix", "get", "/compatibility/", "compatibility.view", None),
    (
        "compatibility:cell_request",
        "post",
        "/compatibility/cells/",
        "compatibility.request",
        {"endpoint": "{endpoint}", "version": "{version}"},
    ),
    (
        "compatibility:label_server",
        "post",
        "/compatibility/servers/",
        "endpoint.manage",
        {"harness": H, "label": "staging", "endpoint": "{endpoint}"},
    ),
]
API_MATRIX = [
    ("api:harness_list", "get", "/api/v1/harnesses/", "studio.view", None),
    ("api:version_list", "get", f"/api/v1/harnesses/{H}/versions/", "studio.view", None),
    ("api:version_files", "get", f"/api/v1/harnesses/{H}/versions/1/", "studio.view", None),
    (
        "api:bundle_import",
        "post",
        "/api/v1/import/",
        "harness.edit",
        {"files": "{files}", "message": "api"},
    ),
    (
        "api:label_set",
        "post",
        f"/api/v1/harnesses/{H}/labels/staging/",
        "label.move",
        {"version": "{flip}", "reason": "api"},
    ),
]
PUBLIC = {"accounts:login", "accounts:logout"}
# The namespaces this matrix covers: the studio core. Apps added later (e.g.
# evolution) keep their own matrix beside their views.
CORE_NAMESPACES = {
    "",
    "harnesses",
    "accounts",
    "jobs",
    "endpoints",
    "playground",
    "audit",
    "api",
    "training",
    "replays",
    "releases",
    "compatibility",
}


def _named_urls() -> set[str]:
    names: set[str] = set()

    def walk(patterns, prefix=""):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                walk(
                    pattern.url_patterns,
                    f"{prefix}{pattern.namespace}:" if pattern.namespace else prefix,
                )
            elif isinstance(pattern, URLPattern) and pattern.name:
                names.add(prefix + pattern.name)

    walk(get_resolver().url_patterns)
    return names


def test_every_named_url_is_in_the_matrix():
    covered = {row[0] for row in MATRIX + API_MATRIX} | PUBLIC
    core = {name for name in _named_urls() if (name.rpartition(":")[0]) in CORE_NAMESPACES}
    assert core == covered
    assert {row[3] for row in MATRIX + API_MATRIX} <= set(PERMISSIONS)


def _trained_run(folder, *, status: str):
    """A finished SFT run row whose folder holds a final model (files only: nothing is trained
    here)."""
    from studio.training.models import TrainingRun

    final = folder / "sft" / "final"
    final.mkdir(parents=True)
    (final / "config.json").write_text("{}")
    (final / "model.safetensors").write_bytes(b"")
    (folder / "sft" / "metrics.jsonl").write_text('{"step": 1, "loss": 2.0}\n')
    job = Job.objects.create(kind="train_sft", title="trained", status=status, params={})
    return TrainingRun.objects.create(
        kind="sft",
        title="trained",
        folder=str(folder),
        config_digest="0" * 64,
        steps=[{"name": "sft", "argv": [], "config_file": "sft.yaml", "output": "sft"}],
        config={"sft": {"max_steps": 1}},
        job=job,
    )


@pytest.fixture
def world(personas, demo_version, demo_files, settings, tmp_path):
    harness = demo_version.harness
    v2 = harness_version_create(
        harness=harness,
        files=edit_skill_rule(demo_files),
        author=personas.operator,
        message="v2",
        parent=demo_version,
    )
    label_move(
        harness=harness, name="staging", version=demo_version, actor=personas.operator, reason=""
    )
    label_move(harness=harness, name="staging", version=v2, actor=personas.operator, reason="")
    draft = draft_create(
        harness=harness, base_version=demo_version, owner=personas.operator, title="matrix"
    )
    draft_file_save(
        draft=draft,
        path=SKILL,
        text=draft.files[SKILL] + "\n",
        base_revision=1,
        actor=personas.operator,
    )
    conflict = DraftConflict.objects.create(
        draft=draft,
        path=SKILL,
        author=personas.operator,
        base_revision=1,
        seen_revision=2,
        their_text="a",
        my_text="b",
    )
    endpoint = ModelEndpoint.objects.create(
        name="remote", route="openai", base_url="http://127.0.0.1:9/v1", model="m"
    )
    secret = EndpointSecret.objects.create(name="vendor", value="a-key")
    job = Job.objects.create(
        kind="worker_check", title="done", status=Job.SUCCEEDED, params={"seconds": 1}
    )
    queued = Job.objects.create(kind="worker_check", title="waiting", params={"seconds": 1})
    settings.TRAINING_RUNS_DIR = tmp_path / "runs"
    run = _trained_run(tmp_path / "trained", status=Job.SUCCEEDED)
    stopped = _trained_run(tmp_path / "stopped", status=Job.CANCELLED)
    from studio.releases.services import release_draft

    release = release_draft(
        checkpoint=str(run.final_dir),
        draft_head="",
        harness_version=f"{H}@v1",
        notes="",
        actor=personas.ml_engineer,
    )
    from studio.training.models import TrainingRun

    replay = TrainingRun.objects.create(
        kind="replay",
        title="replay",
        folder=str(tmp_path / "replay"),
        config_digest="0" * 64,
        job=Job.objects.create(kind="replay_run", title="r", status=Job.FAILED, params={}),
    )
    return {
        "draft": draft,
        "conflict": conflict,
        "endpoint": endpoint,
        "job": job,
        "queued_job": queued,
        "files": demo_files,
        "run": run,
        "stopped_run": stopped,
        "replay": replay,
        "release": release,
        "version": demo_version.pk,
        "secret": secret,
    }


def _fill(template, values: dict):
    if isinstance(template, str):
        for key, value in values.items():
            if isinstance(value, str | int):
                template = template.replace("{" + key + "}", str(value))
    return template


def _request(client, method, path, data, values, *, api_headers=None):
    if data is not None:
        data = {
            k: (values["files"] if v == "{files}" else _fill(v, values)) for k, v in data.items()
        }
    if api_headers is not None:
        body = json.dumps(data) if data is not None else None
        if method == "get":
            return client.get(path, **api_headers)
        return client.post(path, body, content_type="application/json", **api_headers)
    return client.get(path) if method == "get" else client.post(path, data or {})


@pytest.mark.parametrize("role", ROLES)
def test_permission_matrix(role, personas, world):
    from studio.accounts.roles import user_can

    user = personas.by_role()[role]
    client = client_for(user)
    failures = []
    for _name, method, path_template, permission, data in MATRIX:
        world["draft"].refresh_from_db()
        draft = world["draft"]
        values = {
            "draft": draft.pk,
            "conflict": world["conflict"].pk,
            "endpoint": world["endpoint"].pk,
            "job": world["job"].pk,
            "queued_job": world["queued_job"].pk,
            "run": world["run"].pk,
            "stopped_run": world["stopped_run"].pk,
            "release": world["release"].pk,
            "checkpoint": str(world["run"].final_dir),
            "replay": world["replay"].pk,
            "version": world["version"],
            "secret": world["secret"].pk,
            "token": 0,
            "role": role,
            "revision": draft.revision,
            "skill": draft.files.get(SKILL, ""),
            "flip": 1,
        }
        if "{token}" in path_template and user is not None:
            from studio.accounts.models import ApiToken

            token_for(user)
            values["token"] = ApiToken.objects.filter(user=user).first().pk
        path = _fill(path_template, values)
        response = _request(client, method, path, data, values)
        allowed = user is not None and user_can(user, permission)
        if user is None:
            ok = response.status_code == 302 and "/accounts/login/" in response["Location"]
        elif allowed:
            ok = response.status_code in (200, 302) and "/accounts/login/" not in response.get(
                "Location", ""
            )
        else:
            ok = response.status_code == 403
        if not ok:
            failures.append(
                f"{role} {method.upper()} {path} ({permission}): {response.status_code}"
            )
    for _name, method, path_template, permission, data in API_MATRIX:
        values = {"files": edit_skill_rule(world["files"], marker=f"API {role}"), "flip": 1}
        headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(user)}"} if user is not None else {}
        response = _request(
            client_for(None),
            method,
            _fill(path_template, values),
            data,
            values,
            api_headers=headers,
        )
        allowed = user is not None and user_can(user, permission)
        expected = (200, 201) if allowed else ((401,) if user is None else (403,))
        if response.status_code not in expected:
            failures.append(
                f"{role} API {method.upper()} {path_template}: "
                f"{response.status_code} {response.content[:200]}"
            )
    assert not failures, "\n".join(failures)
