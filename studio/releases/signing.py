"""The studio's release signing key: made once on the studio host, its public half given to GPU hosts.

``settings.RELEASE_SIGNING_KEY`` names a PEM file holding an Ed25519 private key. It is made on
first use (readable by its owner only, linked into place atomically so two processes starting at
once keep the same key); ``serving.release.sign_manifest`` signs a decided release's manifest with
it, and ``sglang-command --release`` verifies with ``release_public_key_pem()``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def _make_key(path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    path.parent.mkdir(parents=True, exist_ok=True)
    pem = Ed25519PrivateKey.generate().private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    handle, draft = tempfile.mkstemp(dir=path.parent, prefix=".release-signing-key-")  # mode 0600
    with os.fdopen(handle, "wb") as out:
        out.write(pem)
    try:
        os.link(draft, path)  # the first process's key wins
    except FileExistsError:
        pass
    finally:
        os.unlink(draft)


def release_signing_key():
    """The studio's Ed25519 private key (made on first use)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    path = Path(settings.RELEASE_SIGNING_KEY)
    if not path.exists():
        _make_key(path)
    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as error:
        raise ImproperlyConfigured(f"RELEASE_SIGNING_KEY {path}: not a readable unencrypted PEM private key "
                                   f"({error}); delete it to make a new one (GPU hosts then need the new public key)") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ImproperlyConfigured(f"RELEASE_SIGNING_KEY {path}: an {type(key).__name__}, not an Ed25519 key")
    return key


def release_public_key_pem() -> str:
    """The public half, as the PEM file a GPU host passes to ``sglang-command --release-key``."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return release_signing_key().public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()


def release_key_id() -> str:
    from serving.release import key_id

    return key_id(release_signing_key().public_key())
