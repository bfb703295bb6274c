"""Stored endpoint secret values, encrypted at rest with a key kept outside the database.

A database copy (a backup, ``var/studio.sqlite3`` read by another local user, a dump) held every
stored API key in plain text. Values are now Fernet tokens (``cryptography``: AES-128-CBC with an
HMAC) under the key named by the setting ``ENDPOINT_SECRETS_KEY`` (the environment variable of that
name, a urlsafe base64 Fernet key), or else the file ``var/endpoint-secrets.key`` made once,
readable by its owner only, and shared by the web server and the workers of this checkout. In
production the key must be given: a missing key is an error that says how to make one, never a new
key (which would make every stored value unreadable).

A stored value reads ``fernet:<token>``; ``encrypt`` leaves such a value as it is, so saving a row
twice never encrypts twice.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from studio.keyfiles import create_once

PREFIX = "fernet:"
MAKE_A_KEY = (
    'make one with: python -c "from cryptography.fernet import Fernet; '
    'print(Fernet.generate_key().decode())" and set '
    "ENDPOINT_SECRETS_KEY on the web server and every worker"
)


class SecretUnreadable(ValueError):
    """A stored value that this key cannot decrypt (another key, or damaged); the message says which
    secret."""


def _key_file() -> Path:
    return Path(settings.VAR_DIR) / "endpoint-secrets.key"


def _make_key_file(path: Path) -> None:
    create_once(path, Fernet.generate_key() + b"\n")


@lru_cache(maxsize=4)
def _fernet(configured: str, key_file: str, production: bool) -> Fernet:
    if configured:
        key = configured.encode()
    else:
        path = Path(key_file)
        if not path.exists():
            if production:
                raise ImproperlyConfigured(
                    f"ENDPOINT_SECRETS_KEY is not set and {path} does not exist; {MAKE_A_KEY}"
                )
            _make_key_file(path)
        key = path.read_bytes().strip()
    try:
        return Fernet(key)
    except ValueError:
        raise ImproperlyConfigured(
            f"ENDPOINT_SECRETS_KEY (or {key_file}) is not a Fernet key; {MAKE_A_KEY}"
        ) from None


def fernet() -> Fernet:
    return _fernet(
        getattr(settings, "ENDPOINT_SECRETS_KEY", ""),
        str(_key_file()),
        bool(getattr(settings, "PRODUCTION", False)),
    )


def encrypt(value: str) -> str:
    """The value as stored: empty stays empty, an already encrypted value stays as it is."""
    if not value or value.startswith(PREFIX):
        return value
    return PREFIX + fernet().encrypt(value.encode("utf-8")).decode("ascii")


def decrypt(stored: str) -> str:
    """The plain value of a stored one; SecretUnreadable when this key cannot read it."""
    if not stored:
        return ""
    if not stored.startswith(PREFIX):
        raise SecretUnreadable(
            "its stored value is not encrypted; an admin saves its key again on the Secrets page"
        )
    try:
        return fernet().decrypt(stored[len(PREFIX) :].encode("ascii")).decode("utf-8")
    except (InvalidToken, ValueError):
        raise SecretUnreadable(
            "its stored value cannot be decrypted with this ENDPOINT_SECRETS_KEY (another key "
            "made it); an admin saves its key again on the Secrets page"
        ) from None
