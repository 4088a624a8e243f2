"""The secret broker port: credentials for a binding, handed back as references.

Steward stores and shows references only (`env:<variable>`, `local:<binding>/key`); the
secret material stays with the broker. `STEWARD_SECRET_BROKER` names the broker class:
in production `EnvironmentBroker`, which names credentials an operator gives every
Steward process in its environment, so no replica needs a folder of its own; in
development `LocalFileBroker`, which makes up secrets and keeps them in files outside
the database (`STEWARD_SECRET_BROKER_DIR`). docs/stores.md shows how to plug in
HashiCorp Vault.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
from pathlib import Path
from typing import Protocol

from django.conf import settings
from django.utils.module_loading import import_string

from apps.core.scope import current_scope, system_scope, tenant_scope
from apps.stores.models import StoreBinding

logger = logging.getLogger(__name__)

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


class SecretsMissing(RuntimeError):
    """The environment lacks a binding's credentials: the binding fails with this,
    naming the variables to set (never their values)."""


class EnvironmentBroker:
    """Credentials an operator provisions at the store and gives every Steward process
    in its environment, one pair per store and region, shared by the tenants bound
    there: `STEWARD_STORE_SECRET_<STORE>__<REGION>__KEY` and `…__CONNECTION` (slugs
    upper-cased, `-` as `_`). References name the variables; the values stay in the
    environment. Steward cannot make an environment's secret unusable, and the pair
    serves other bindings: revoking records nothing here, and rotating the credential
    at the store is the operator's (docs/stores.md)."""

    scheme = "env"
    prefix = "STEWARD_STORE_SECRET_"
    parts = ("KEY", "CONNECTION")

    @classmethod
    def variables(cls, store_slug: str, region_slug: str) -> tuple[str, str]:
        def name(slug: str) -> str:
            return re.sub(r"[^A-Z0-9]", "_", slug.upper())

        stem = f"{cls.prefix}{name(store_slug)}__{name(region_slug)}__"
        key, connection = (stem + part for part in cls.parts)
        return key, connection

    def _references(self, store_slug: str, region_slug: str) -> tuple[str, str] | None:
        names = self.variables(store_slug, region_slug)
        if not all(os.environ.get(name) for name in names):
            return None
        key, connection = (f"{self.scheme}:{name}" for name in names)
        return key, connection

    def issue_credentials(self, binding) -> tuple[str, str]:
        found = self._references(binding.store.slug, binding.region.slug)
        if found is None:
            names = self.variables(binding.store.slug, binding.region.slug)
            missing = [name for name in names if not os.environ.get(name)]
            raise SecretsMissing(f"Set {' and '.join(missing)} in Steward's environment.")
        return found

    def find(self, binding_id) -> tuple[str, str] | None:
        # The caller's tenant scope if it holds one (scopes only narrow), else the system's.
        tenant_id = current_scope().tenant_id
        reading = tenant_scope(tenant_id) if tenant_id else system_scope(reads_only=True)
        with reading:
            found = StoreBinding.objects.select_related("store", "region").filter(pk=binding_id)
            binding = found.first()
        if binding is None:
            return None
        return self._references(binding.store.slug, binding.region.slug)

    def _variable(self, reference: str) -> str:
        scheme, _, name = reference.partition(":")
        if scheme != self.scheme or not name.startswith(self.prefix) or "__" not in name:
            raise ValueError(f"not a reference of this broker: {reference!r}")
        if not name.endswith(tuple(f"__{part}" for part in self.parts)):
            raise ValueError(f"not a reference of this broker: {reference!r}")
        return name

    def revoke(self, reference: str) -> None:
        logger.info(
            "%s is shared and lives in the environment: rotate it at the store to revoke it",
            self._variable(reference),
        )

    def read(self, reference: str) -> str:
        """The secret itself: for the consumer of the reference, never for Steward."""
        return os.environ[self._variable(reference)]


def get_broker() -> SecretBroker:
    return import_string(settings.STEWARD_SECRET_BROKER)()
