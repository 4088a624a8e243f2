"""Writing the audit trail. Services call `audit_record` inside their own transaction."""

from __future__ import annotations

import uuid

from django.db import connection, models

from apps.core.context import SYSTEM_ACTOR, Actor, request_id
from apps.core.scope import Scope, current_scope, owner_scope
from apps.tenancy.models import AuditEvent

# Values that are never copied into an audit row.
SECRET_FIELDS = frozenset({"password", "digest", "token", "secret"})


def _plain(value):
    if isinstance(value, models.Model):
        return str(value.pk)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def snapshot(instance: models.Model, fields: list[str]) -> dict:
    """The audited fields of an object, as JSON-ready values (secrets left out)."""
    return {name: _plain(getattr(instance, name)) for name in fields if name not in SECRET_FIELDS}


def diff(before: dict, after: dict) -> dict:
    """`{field: [before, after]}` for the fields that changed."""
    return {
        key: [before.get(key), after.get(key)]
        for key in sorted(set(before) | set(after))
        if before.get(key) != after.get(key)
    }


def audit_record(
    *,
    actor: Actor | None,
    action: str,
    instance: models.Model,
    tenant=None,
    changes: dict | None = None,
) -> AuditEvent:
    """Append one audit event in the current transaction.

    The row belongs to `tenant`, a Tenant or its id (or is platform-wide when None), and
    is written in that tenant's scope, or in the system scope for platform-wide rows, as
    RLS requires.
    """
    actor = actor or SYSTEM_ACTOR
    tenant_id = getattr(tenant, "pk", tenant)
    event = AuditEvent(
        tenant_id=tenant_id,
        actor_user=actor.user,
        actor_service=actor.service_account,
        actor_label=actor.label[:150],
        action=action,
        object_type=instance._meta.label_lower,
        object_id=str(instance.pk),
        object_repr=str(instance)[:200],
        changes=changes or {},
        request_id=request_id.get(),
    )
    if connection.in_atomic_block and current_scope() == _owner(tenant_id):
        # In the owner's scope already (a service's own transaction): the row needs no
        # scope of its own, nor the savepoint entering one costs. It must not outlive a
        # failure either: a failed audit insert fails the change it records.
        event.save()
    else:
        with owner_scope(tenant_id):
            event.save()
    return event


def _owner(tenant_id) -> Scope:
    """The scope owner_scope(tenant_id) enters."""
    if tenant_id is None:
        return Scope(system=True)
    return Scope(
        tenant_id=tenant_id if isinstance(tenant_id, uuid.UUID) else uuid.UUID(str(tenant_id))
    )
