"""The studio's release signing key: made once on the studio host, its public half given to GPU
hosts.

``settings.RELEASE_SIGNING_KEY`` names a PEM file holding an Ed25519 private key. Locally it is made
on first use (readable by its owner only, linked into place atomically so two processes starting at
once keep the same key), but only while no release has been signed: a key file that went missing
after that is an error, never a new key, since a new key breaks every earlier signature. In
production a missing key is always an error that says how to provide one.
``release_decide`` signs a decided release's manifest with it once, and ``sglang-command --release``
verifies with ``release_public_key_pem()``.
"""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from studio.keyfiles import create_once


def _make_key(path: Path) -> None:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat

    create_once(
        path,
        Ed25519PrivateKey.generate().private_bytes(
            Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()
        ),
    )


_PROVIDE = (
    "restore the key file from a backup, or give its "
    "path in RELEASE_SIGNING_KEY; to make a first key: "
    'python -c "from cryptography.hazmat.primitives.asymmetric.ed25519 '
    "import Ed25519PrivateKey as K; "
    "from cryptography.hazmat.primitives import "
    "serialization as s; import sys; sys.stdout.buffer.write("
    'K.generate().private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()))" > FILE '
    "(mode 0600); GPU hosts then need its public key"
)


def _refuse_a_new_key_if_one_was_used(path: Path) -> None:
    if getattr(settings, "PRODUCTION", False):
        raise ImproperlyConfigured(f"RELEASE_SIGNING_KEY {path} does not exist; {_PROVIDE}")
    from studio.releases.models import Release

    signed = Release.objects.filter(signed_manifest__isnull=False).count()
    if signed:
        raise ImproperlyConfigured(
            f"RELEASE_SIGNING_KEY {path} does not exist, but "
            f"{signed} release(s) were signed with a key: a new key "
            f"would break every earlier signature, so none is made; {_PROVIDE}"
        )


def release_signing_key():
    """The studio's Ed25519 private key (made on first use)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    path = Path(settings.RELEASE_SIGNING_KEY)
    if not path.exists():
        _refuse_a_new_key_if_one_was_used(path)
        _make_key(path)
    try:
        key = load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as error:
        raise ImproperlyConfigured(
            f"RELEASE_SIGNING_KEY {path}: not a readable unencrypted PEM private key "
            f"({error}); delete it to make a new one (GPU hosts then need the new public key)"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ImproperlyConfigured(
            f"RELEASE_SIGNING_KEY {path}: an {type(key).__name__}, not an Ed25519 key"
        )
    return key


def release_public_key_pem() -> str:
    """The public half, as the PEM file a GPU host passes to ``sglang-command --release-key``."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return (
        release_signing_key()
        .public_key()
        .public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )


def release_key_id() -> str:
    from serving.release import key_id

    return key_id(release_signing_key().public_key())
