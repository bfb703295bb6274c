"""Template context: the signed-in user's roles and a `can` lookup."""

from __future__ import annotations

from studio.accounts.roles import PERMISSIONS, user_can, user_roles


class _Can:
    def __init__(self, user):
        self._user = user

    def __getitem__(self, key: str) -> bool:
        # Templates cannot use dots inside a key: `can.harness_edit` asks "harness.edit".
        permission = key.replace("_", ".", 1)
        return permission in PERMISSIONS and user_can(self._user, permission)


def roles(request) -> dict:
    user = getattr(request, "user", None)
    if user is None:
        return {}
    return {"user_roles": sorted(user_roles(user)), "can": _Can(user)}
