"""The secret broker port: credentials for a binding, handed back as references.

Steward stores and shows references only (`local:<binding>/key`); the secret material
stays with the broker. `STEWARD_SECRET_BROKER` names the broker class. The local
broker, for development and tests, keeps secrets in files outside the database
(`STEWARD_SECRET_BROKER_DIR`); docs/stores.md shows how to plug in HashiCorp Vault.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string

TARGET = "secret-broker"
ISSUE = "issue_credentials"


def issue_key(binding_id, attempt: int = 0) -> str:
    """The uncertain effect's key for a binding's issue call. Credentials issued but
    revoked unrecorded (the binding was flagged while the call was out) leave that
    call settled, so issuing again after an exception is another call: its key counts."""
    return str(binding_id) if attempt == 0 else f"{binding_id}/{attempt}"


def binding_of(issue_key: str) -> str:
    """The binding an issue call's key names."""
    return issue_key.partition("/")[0]


class SecretBroker(Protocol):
    def issue_credentials(self, binding) -> tuple[str, str]:
        """(key reference, connection reference) for the binding. Idempotent per
        binding: asked again, the broker answers with the same references."""

    def find(self, binding_id: str) -> tuple[str, str] | None:
        """The references issued for a binding, or None if none were: how an
        issue call that timed out is reconciled."""

    def revoke(self, reference: str) -> None:
        """Make the referenced secret unusable. Revoking twice is not an error."""


class LocalFileBroker:
    """Secrets in files under one directory (mode 0600), one directory per binding."""

    scheme = "local"

    def __init__(self, root: str | None = None):
        self.root = Path(root or settings.STEWARD_SECRET_BROKER_DIR)

    def _dir(self, binding_id) -> Path:
        return self.root / str(binding_id)

    def _refs(self, binding_id) -> tuple[str, str]:
        return (f"{self.scheme}:{binding_id}/key", f"{self.scheme}:{binding_id}/connection")

    def issue_credentials(self, binding) -> tuple[str, str]:
        folder = self._dir(binding.pk)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        secret_files = {
            "key": secrets.token_urlsafe(32),
            "connection": (
                f"{binding.profile.engine}://{binding.store.slug}:{secrets.token_urlsafe(24)}"
                f"@{binding.region.slug}.stores.internal/{binding.tenant.slug}"
            ),
        }
        for name, value in secret_files.items():
            path = folder / name
            if not path.exists():  # idempotent: a retried issue keeps the first secret
                descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(descriptor, "w") as handle:
                    handle.write(value)
        return self._refs(binding.pk)

    def find(self, binding_id) -> tuple[str, str] | None:
        folder = self._dir(binding_id)
        if (folder / "key").exists() and (folder / "connection").exists():
            return self._refs(binding_id)
        return None

    def revoke(self, reference: str) -> None:
        scheme, _, path = reference.partition(":")
        if scheme != self.scheme or ".." in path:
            raise ValueError(f"not a reference of this broker: {reference!r}")
        (self.root / path).unlink(missing_ok=True)

    def read(self, reference: str) -> str:
        """The secret itself: for the consumer of the reference, never for Steward."""
        _, _, path = reference.partition(":")
        return (self.root / path).read_text()


def get_broker() -> SecretBroker:
    return import_string(settings.STEWARD_SECRET_BROKER)()
