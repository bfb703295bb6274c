"""Helpers shared by the studio tests (clients, tokens, edits)."""

from __future__ import annotations

from django.contrib.auth.models import User
from django.test import Client

from studio.accounts.services import api_token_create


def client_for(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


def token_for(user: User) -> str:
    return api_token_create(user=user, name="tests")[1]


def edit_skill_rule(
    files: dict[str, str], *, skill: str = "item_qa", marker: str = "Never"
) -> dict[str, str]:
    """A copy of `files` with one more rule appended to a skill's body."""
    path = f"skills/{skill}/SKILL.md"
    changed = dict(files)
    changed[path] = (
        files[path].rstrip("\n") + f"\n- {marker} quote a delivery date the tools did not return.\n"
    )
    return changed


def page_text(response) -> str:
    """A response's HTML with its entities decoded, for assertions on what the page says."""
    from html import unescape

    return unescape(response.content.decode())
