"""The studio's MCP servers are a deployment setting: an admin registers them, a Harness only names
one.

Issue 14, finding 1 on the studio side. An operator imported a Harness whose
tools.yaml carried ``mcp_servers: {x: {command: ["sh", "-c", "id > FILE"]}}`` and
ran it in the playground: the Celery worker ran the command. Now import,
validation and the workers use one registry (studio.mcpservers: the admin-only
page's rows plus the HS_MCP_REGISTRY file), refuse an unregistered name or an
inline command with the words that say how to register one, and start nothing.
"""

from __future__ import annotations

import html
import json
import time
from pathlib import Path

import pytest
from django.core import checks

from harness import load_mapping
from studio.audit.models import AuditEvent
from studio.endpoints.services import endpoint_save
from studio.harnesses.bundles import bundle_summary, files_to_zip
from studio.harnesses.models import Draft, Harness, HarnessVersion
from studio.harnesses.services import blobs_store, draft_create, draft_file_save
from studio.jobs.models import Job
from studio.mcpservers.models import McpServer
from tests.studio.studio_testing import client_for, token_for

pytestmark = pytest.mark.django_db

HOW_TO_REGISTER = (
    "an admin registers it on the MCP servers page (/mcp-servers/) or in the HS_MCP_REGISTRY file"
)
SCRIPT = Path(__file__).parents[1] / "studio" / "testdata" / "price.script.json"
REQUEST = (
    '{"id": "pg", "comments": ["How much is product #3?"], '
    '"room": {"current_link_id": 1, "shelf": [1, 2, 3]}}'
)


def with_servers(files: dict[str, str], block: str) -> dict[str, str]:
    """The demo bundle with ``block`` (lines at two spaces) as the first entries of mcp_servers."""
    tools = files["tools.yaml"]
    assert tools.startswith("mcp_servers:\n")
    return {**files, "tools.yaml": "mcp_servers:\n" + block + tools[len("mcp_servers:\n") :]}


def hostile(files: dict[str, str], marker: Path) -> dict[str, str]:
    """The finding's Harness: server x declares its own command, which would write ``marker``."""
    return with_servers(
        files, f'  x:\n    transport: stdio\n    command: ["sh", "-c", "id > {marker}"]\n'
    )


def page(response) -> str:
    return html.unescape(response.content.decode())


# --- the admin page ------------------------------------------------------------------------------

SERVER_FORM = {
    "name": "clock",
    "transport": "stdio",
    "command": "/srv/mcp-time/bin/python\n-m\nmcp_server_time",
    "url": "",
    "env": "LOCAL_TIMEZONE=Europe/Paris",
    "pass_env": "TZ, LANG",
    "description": "time",
}


@pytest.mark.parametrize("role", ["operator", "reviewer", "ml_engineer", "outsider"])
def test_only_an_admin_may_see_or_change_the_mcp_servers(personas, role):
    server = McpServer.objects.get(name="marketing")
    client = client_for(personas.by_role()[role])
    assert client.get("/mcp-servers/").status_code == 403
    assert client.get("/mcp-servers/new/").status_code == 403
    assert client.post("/mcp-servers/new/", SERVER_FORM).status_code == 403
    assert client.get(f"/mcp-servers/{server.pk}/edit/").status_code == 403
    assert (
        client.post(
            f"/mcp-servers/{server.pk}/edit/", {**SERVER_FORM, "name": "marketing"}
        ).status_code
        == 403
    )
    assert client.post(f"/mcp-servers/{server.pk}/delete/").status_code == 403
    assert list(McpServer.objects.values_list("name", "command")) == [("marketing", server.command)]
    assert "/mcp-servers/" not in client.get("/jobs/").content.decode()  # no nav link either
    anonymous = client_for(None).get("/mcp-servers/")
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous["Location"]


def test_an_admin_registers_edits_and_unregisters_a_server_each_change_audited(
    personas, demo_version
):
    admin = client_for(personas.admin)
    listing = page(admin.get("/mcp-servers/"))
    assert 'href="/mcp-servers/"' in listing  # the nav link, for admins
    assert 'data-server="marketing"' in listing and "-m harness serve-mcp" in listing
    assert "livestream-avatar v1" in listing  # which versions name the server

    response = admin.post("/mcp-servers/new/", SERVER_FORM)
    assert response.status_code == 302 and response["Location"] == "/mcp-servers/"
    clock = McpServer.objects.get(name="clock")
    assert clock.command == ["/srv/mcp-time/bin/python", "-m", "mcp_server_time"]
    assert clock.env == {"LOCAL_TIMEZONE": "Europe/Paris"} and clock.pass_env == ["TZ", "LANG"]
    assert clock.created_by == personas.admin
    created = AuditEvent.objects.get(action="mcp_server.create", target="MCP server clock")
    assert created.actor == personas.admin and created.data["before"] is None
    assert created.data["after"]["command"] == clock.command and created.data["after"]["env"] == [
        "LOCAL_TIMEZONE"
    ]
    assert "Europe/Paris" not in json.dumps(
        created.data
    )  # every role reads the audit log: names, not values

    edit = admin.get(f"/mcp-servers/{clock.pk}/edit/").content.decode()
    assert (
        "LOCAL_TIMEZONE=Europe/Paris" in edit
        and "/srv/mcp-time/bin/python\n-m\nmcp_server_time" in edit
    )
    response = admin.post(
        f"/mcp-servers/{clock.pk}/edit/",
        {**SERVER_FORM, "env": "LOCAL_TIMEZONE=UTC", "pass_env": "TZ"},
    )
    assert response.status_code == 302
    clock.refresh_from_db()
    assert (
        clock.env == {"LOCAL_TIMEZONE": "UTC"}
        and clock.pass_env == ["TZ"]
        and clock.updated_by == personas.admin
    )
    updated = AuditEvent.objects.get(action="mcp_server.update")
    assert updated.data["before"]["pass_env"] == ["TZ", "LANG"] and updated.data["after"][
        "pass_env"
    ] == ["TZ"]
    assert updated.data["env_values_changed"] == ["LOCAL_TIMEZONE"] and "UTC" not in json.dumps(
        updated.data
    )

    assert admin.post(f"/mcp-servers/{clock.pk}/delete/").status_code == 302
    assert not McpServer.objects.filter(name="clock").exists()
    deleted = AuditEvent.objects.get(action="mcp_server.delete")
    assert deleted.data["before"]["command"] == clock.command and deleted.data["after"] is None
    assert "mcp_server.delete" in client_for(personas.reviewer).get("/audit/").content.decode()


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"name": "my server!"}, "name", "'my server!' is not valid"),
        ({"name": "marketing"}, "name", "an MCP server called 'marketing' is already registered"),
        ({"command": ""}, "command", "a stdio server needs a command"),
        ({"transport": "http", "url": ""}, "url", "an http server needs a url"),
        (
            {"transport": "http", "url": "ftp://example.com/mcp"},
            "url",
            "an http:// or https:// URL",
        ),
        ({"transport": "carrier-pigeon"}, "transport", "choose one of stdio, http"),
        ({"env": "LOCAL_TIMEZONE"}, "env", "line 1: 'LOCAL_TIMEZONE' is not NAME=value"),
        ({"env": "BAD-NAME=1"}, "env", "'BAD-NAME' is not valid"),
        ({"pass_env": "TZ not-a-name"}, "pass_env", "an environment variable name (A-Z, 0-9, _)"),
        ({"description": "x" * 3000}, "description", "is too long"),
        ({"command": "x" * 20000}, "command", "longer than 16384 characters"),
    ],
)
def test_a_bad_server_is_shown_again_with_the_field_named_and_nothing_saved(
    personas, change, field, words
):
    before = (McpServer.objects.count(), AuditEvent.objects.count())
    response = client_for(personas.admin).post("/mcp-servers/new/", {**SERVER_FORM, **change})
    assert response.status_code == 400
    text = page(response)
    assert f'data-field="{field}">{field}: ' in text and words in text, text[:3000]
    assert 'name="name" value="' in text  # the form again, with what was typed
    assert (McpServer.objects.count(), AuditEvent.objects.count()) == before


def test_seed_demo_registers_the_marketing_server_once(fast_passwords, db):
    import io
    import sys

    from django.core.management import call_command

    command = [sys.executable, "-m", "harness", "serve-mcp"]
    for _ in range(2):
        out = io.StringIO()
        call_command("seed_demo", stdout=out)
        assert f"MCP server marketing: {' '.join(command)}." in out.getvalue()
    server = McpServer.objects.get()
    assert (server.name, server.command) == ("marketing", command)
    assert AuditEvent.objects.filter(action="mcp_server.create").count() == 1


# --- import and validation refuse what the registry does not hold ---------------------------------


def test_importing_a_harness_with_its_own_server_command_is_refused_by_both_doors(
    personas, demo_files, tmp_path
):
    marker = tmp_path / "MARKER"
    files = hostile(demo_files, marker)
    zipped = files_to_zip(files, folder="livestream-avatar")
    problem = f"tools.yaml:2: mcp_servers.x: declares its own command (sh -c id > {marker})"

    upload = client_for(personas.operator).post(
        "/import/", {"bundle": _upload(zipped), "message": "campaign"}
    )
    assert upload.status_code == 400
    text = page(upload)
    assert (
        "<code>tools.yaml:2</code> <strong>mcp_servers.x</strong>: declares its own command" in text
    )
    assert HOW_TO_REGISTER in text and "the studio never runs a Harness's own commands" in text

    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(personas.operator)}"}
    api = client_for(None)
    by_zip = api.post("/api/v1/import/", zipped, content_type="application/zip", **headers)
    by_json = api.post(
        "/api/v1/import/", json.dumps({"files": files}), content_type="application/json", **headers
    )
    for response in (by_zip, by_json):
        assert response.status_code == 400
        body = response.json()
        assert body["error"] == "the bundle is not valid"
        assert any(p.startswith(problem) and HOW_TO_REGISTER in p for p in body["problems"]), body
    assert not Harness.objects.exists() and not HarnessVersion.objects.exists()
    assert not AuditEvent.objects.filter(action__in=["harness.create", "version.create"]).exists()
    assert not marker.exists()


def test_a_harness_naming_an_unregistered_server_is_refused_saying_how_to_register_it(
    personas, demo_files
):
    files = with_servers(demo_files, "  weather:\n    registered: nope\n")
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(personas.operator)}"}
    response = client_for(None).post(
        "/api/v1/import/", json.dumps({"files": files}), content_type="application/json", **headers
    )
    assert response.status_code == 400
    assert response.json()["problems"] == [
        "tools.yaml:2: mcp_servers.weather.registered: 'nope' is not a registered MCP server here "
        f"(registered: marketing); {HOW_TO_REGISTER} (docs/studio.md, 'MCP servers')"
    ]
    assert not HarnessVersion.objects.exists()


def test_a_draft_that_adds_a_server_command_shows_the_problem_and_cannot_be_committed(
    personas, demo_version, tmp_path
):
    marker = tmp_path / "MARKER"
    draft = draft_create(
        harness=demo_version.harness, base_version=demo_version, owner=personas.operator, title="x"
    )
    tools = hostile(draft.files, marker)["tools.yaml"]
    saved = draft_file_save(
        draft=draft,
        path="tools.yaml",
        text=tools,
        base_revision=draft.revision,
        actor=personas.operator,
    )
    assert [(p["file"], p["line"], p["field"]) for p in saved.problems] == [
        ("tools.yaml", 2, "mcp_servers.x")
    ]
    editor = page(client_for(personas.operator).get(f"/drafts/{draft.pk}/?path=tools.yaml"))
    assert "declares its own command" in editor
    response = client_for(personas.operator).post(
        f"/drafts/{draft.pk}/commit/", {"message": "add x"}
    )
    assert response.status_code in (302, 400)
    assert (
        HarnessVersion.objects.count() == 1 and Draft.objects.get(pk=draft.pk).status == Draft.OPEN
    )
    assert not marker.exists()


# --- the HS_MCP_REGISTRY file ---------------------------------------------------------------------


def test_servers_from_the_settings_file_are_usable_and_shown_read_only(
    personas, demo_files, settings, tmp_path
):
    registry = tmp_path / "mcp.yaml"
    registry.write_text(
        "servers:\n  clock:\n    transport: http\n    url: http://127.0.0.1:9/mcp\n"
        "    description: the time server\n"
    )
    settings.HS_MCP_REGISTRY = str(registry)
    files = with_servers(demo_files, "  time:\n    registered: clock\n")
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(personas.operator)}"}
    response = client_for(None).post(
        "/api/v1/import/", json.dumps({"files": files}), content_type="application/json", **headers
    )
    assert response.status_code == 201, response.content
    listing = page(client_for(personas.admin).get("/mcp-servers/"))
    table = listing[listing.index('id="mcp-servers-file"') :]
    assert 'data-server="clock"' in table and "settings file, read-only" in table
    assert f"{registry}:2" in table and "livestream-avatar v1" in table and "/edit/" not in table
    refused = client_for(personas.admin).post("/mcp-servers/new/", {**SERVER_FORM, "name": "clock"})
    assert refused.status_code == 400 and "registers 'clock' and the file wins" in page(refused)


def test_a_broken_settings_file_is_reported_and_nothing_is_started(
    personas, demo_files, settings, tmp_path
):
    registry = tmp_path / "mcp.yaml"
    registry.write_text("servers:\n  clock:\n    transport: pigeon\n")
    settings.HS_MCP_REGISTRY = str(registry)
    listing = client_for(personas.admin).get("/mcp-servers/")
    assert listing.status_code == 200
    assert f"{registry}:3: servers.clock.transport: 'pigeon' is not valid" in page(listing)
    errors = [m for m in checks.run_checks() if m.id == "mcpservers.E001"]
    assert [m.msg for m in errors] == [
        f"{registry}:3: servers.clock.transport: 'pigeon' is not valid; use one of: stdio, http"
    ]
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token_for(personas.operator)}"}
    response = client_for(None).post(
        "/api/v1/import/",
        json.dumps({"files": demo_files}),
        content_type="application/json",
        **headers,
    )
    assert response.status_code == 400
    assert "the studio's MCP registry file is broken" in response.json()["problems"][0]


# --- the playground on a real worker ------------------------------------------------------------


def _upload(data: bytes):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile("bundle.zip", data, content_type="application/zip")


def stored_before_registries(*, files: dict[str, str], author) -> HarnessVersion:
    """A version written straight to the database, as one imported before servers had to be
    registered."""
    bundle = load_mapping(files)
    harness, _ = Harness.objects.get_or_create(name=bundle.name, defaults={"created_by": author})
    number = harness.versions.count() + 1
    return HarnessVersion.objects.create(
        harness=harness,
        number=number,
        digest=bundle.digest,
        tree=blobs_store(files=bundle.files),
        message="old import",
        author=author,
        summary=bundle_summary(bundle).to_dict(),
    )


def run_in_playground(client, *, version, endpoint) -> Job:
    response = client.post(
        "/playground/", {"version": version.pk, "endpoint": endpoint.pk, "request_json": REQUEST}
    )
    assert response.status_code == 302, page(response)[:2000]
    job = Job.objects.get(pk=int(response["Location"].rstrip("/").rsplit("/", 1)[1]))
    deadline = time.monotonic() + 120
    while job.is_active and time.monotonic() < deadline:
        time.sleep(0.3)
        job.refresh_from_db()
    assert not job.is_active, f"the job is still {job.status}: {job.log_tail}"
    return job


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_stored_harness_with_its_own_server_command_leaves_no_trace_on_a_real_worker(
    personas, demo_files, tmp_path
):
    """The acceptance test: any role runs the finding's version in the playground; the worker starts
    nothing."""
    from studio.jobs.testing import celery_worker

    marker = tmp_path / "MARKER"
    endpoint = endpoint_save(
        endpoint=None,
        name="scripted-price",
        route="scripted",
        base_url="",
        model="",
        description="",
        actor=personas.ml_engineer,
        script_path=str(SCRIPT),
    )
    demo = stored_before_registries(files=demo_files, author=personas.admin)
    attack = stored_before_registries(files=hostile(demo_files, marker), author=personas.operator)
    viewer = client_for(personas.reviewer)
    with celery_worker() as worker:
        control = run_in_playground(viewer, version=demo, endpoint=endpoint)
        refused = run_in_playground(viewer, version=attack, endpoint=endpoint)
    # the same worker ran the registered marketing server: it does run jobs and MCP servers
    assert control.status == Job.SUCCEEDED, control.error + control.log_tail
    assert "Link 3 is the Sunscreen SPF50" in json.dumps(control.result)
    assert refused.status == Job.FAILED and refused.worker.startswith(worker.queue)
    assert refused.error.startswith("MCP servers refused; nothing was started:")
    assert (
        f"tools.yaml:2: mcp_servers.x: declares its own command (sh -c id > {marker})"
        in refused.error
    )
    assert HOW_TO_REGISTER in refused.error
    job_page = page(client_for(personas.reviewer).get(f"/jobs/{refused.pk}/"))
    assert "tools.yaml:2: mcp_servers.x: declares its own command" in job_page
    assert "Traceback" not in refused.log_tail
    assert not marker.exists() and list(tmp_path.iterdir()) == []


def test_the_studio_never_falls_back_to_the_command_line_registry(
    personas, demo_files, tmp_path, django_capture_on_commit_callbacks
):
    """Unregistered in the studio, the demo's marketing server is refused, though the CLIs have it
    built in."""
    McpServer.objects.all().delete()
    endpoint = endpoint_save(
        endpoint=None,
        name="scripted-price",
        route="scripted",
        base_url="",
        model="",
        description="",
        actor=personas.ml_engineer,
        script_path=str(SCRIPT),
    )
    version = stored_before_registries(files=demo_files, author=personas.admin)
    with django_capture_on_commit_callbacks(execute=True):
        response = client_for(personas.operator).post(
            "/playground/",
            {"version": version.pk, "endpoint": endpoint.pk, "request_json": REQUEST},
        )
    assert response.status_code == 302
    job = Job.objects.get(kind="playground_run")
    assert job.status == Job.FAILED
    assert (
        "tools.yaml:2: mcp_servers.marketing.registered: "
        "'marketing' is not a registered MCP server here "
        f"(registered: none); {HOW_TO_REGISTER}"
    ) in job.error
