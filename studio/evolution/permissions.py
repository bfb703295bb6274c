"""The evolution loop's permissions, named in the studio's one table.

``accounts.roles.PERMISSIONS`` holds who may do what for every app, the
evolution keys (evolution.view / run / review / edit) included; this module
only gives them the names the evolution code reads best with.
"""

from __future__ import annotations

from studio.accounts.decorators import requires as evolution_requires
from studio.accounts.roles import PERMISSIONS
from studio.accounts.roles import user_can as evolution_can

EVOLUTION_PERMISSIONS = {k: v for k, v in PERMISSIONS.items() if k.startswith("evolution.")}

__all__ = ["EVOLUTION_PERMISSIONS", "evolution_can", "evolution_requires"]
