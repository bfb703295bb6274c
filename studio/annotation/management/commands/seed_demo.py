"""manage.py seed_demo: roles, demo users, the marketing MCP server, the demo Harness at production,
the local endpoint.

Idempotent: a second run changes nothing but the demo users' passwords back
to the printed ones. For the local demo only; never run it on a shared server.

It lives in the annotation app, the highest of the apps it seeds (annotation reads the evolution's
and the harnesses' rows), so that seeding the demo makes no lower app import a higher one
(docs/architecture.md §1).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand
from django.db import transaction

from harness import demo_harness_dir, load_dir
from studio.accounts.roles import ADMIN, ANNOTATOR, ML_ENGINEER, OPERATOR, REVIEWER
from studio.accounts.services import roles_ensure, user_create
from studio.annotation.demo import demo_queue_ensure
from studio.endpoints.services import endpoint_ensure_demo_adapter, endpoint_ensure_local
from studio.harnesses.models import Label
from studio.harnesses.services import harness_import, label_move
from studio.mcpservers.services import mcp_server_ensure_demo

DEMO_USERS = [
    ("olivia", "olivia-operator", [OPERATOR], "operator: edits Harnesses"),
    ("rafael", "rafael-reviewer", [REVIEWER], "reviewer: promotes to production"),
    ("mei", "mei-ml-engineer", [ML_ENGINEER], "ML engineer: endpoints, training"),
    ("admin", "admin-harness", [ADMIN], "admin: everything"),
    ("lena", "lena-annotator", [ANNOTATOR], "annotator: labels replies (/annotation/)"),
]


class Command(BaseCommand):
    help = (
        "Create roles, demo users, the demo's marketing "
        "MCP server, the demo Harness (v1 at production) "
        "and the model endpoints (the shipped demo adapter, chosen by default, and the base model)."
    )

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        roles_ensure()
        users = {}
        for username, password, roles, _ in DEMO_USERS:
            users[username] = user_create(username=username, password=password, roles=roles)
        admin = users["admin"]
        if not admin.is_superuser:
            admin.is_superuser = admin.is_staff = True
            admin.save(update_fields=["is_superuser", "is_staff"])

        # the demo Harness names this server (registered: marketing); it must be registered first
        server = mcp_server_ensure_demo(actor=admin)
        result = harness_import(
            files=load_dir(demo_harness_dir()).files,
            author=admin,
            message="Demo Harness as shipped",
        )
        harness, version = result.harness, result.version
        if not harness.description:
            harness.description = (
                "The TaoLive-style live-commerce avatar agent: "
                "reply and strategy skills, tools, prompt, hooks."
            )
            harness.save(update_fields=["description"])
        if not Label.objects.filter(harness=harness, name=Label.PRODUCTION).exists():
            label_move(
                harness=harness,
                name=Label.PRODUCTION,
                version=version,
                actor=admin,
                reason="Initial demo release",
            )
        demo_queue_ensure(first=users["rafael"], second=admin)  # a dispute a third label settles
        endpoint = endpoint_ensure_local(actor=admin)
        adapter = endpoint_ensure_demo_adapter(actor=admin)

        state = "imported" if result.created else "already present"
        self.stdout.write(
            f"Harness {harness.name} v{version.number} {state} "
            f"(digest {version.digest[:12]}), label production."
        )
        self.stdout.write(
            f"Model endpoint {endpoint.name} "
            f"({endpoint.get_route_display()}): the untrained base model."
        )
        if adapter is not None:
            self.stdout.write(
                f"Model endpoint {adapter.name} "
                f"({adapter.get_route_display()}): the shipped demo adapter "
                f"{adapter.model}, chosen by default."
            )
        if server is not None:
            self.stdout.write(f"MCP server {server.name}: {' '.join(server.command)}.")
        else:
            self.stdout.write("MCP server marketing: from the HS_MCP_REGISTRY file.")
        self.stdout.write("Demo users (local demo only):")
        for username, password, _roles, what in DEMO_USERS:
            self.stdout.write(f"  {username:<8} password {password:<18} {what}")
