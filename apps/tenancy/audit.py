"""Writing the audit trail: the only code that inserts or redacts its rows.

Services call `audit_record` inside their own transaction; a batch of moves writes its
rows in the statement that moves them, with `audit_moved`. A tenant deletion or a
retention rule on the audit trail replaces the personal columns through
`audit_redact_batch`, the one redaction door the table's trigger lets through
(migration tenancy 0003); nothing ever deletes a row.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from string import Formatter

from django.core.exceptions import FieldDoesNotExist
from django.db import connection, models
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR, Actor, request_id
from apps.core.scope import Scope, current_scope, owner_scope, system_scope, tenant_scope
from apps.core.transitions import FollowOn
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


@dataclass(frozen=True)
class Moved:
    """In `audit_moved`, a value of the row as moved: a field, or a member the batch
    carried, by name."""

    name: str


def audit_moved(
    model: type[models.Model],
    *,
    actor: Actor | None,
    action: str,
    object_repr: str,
    changes: Mapping[str, Sequence],
) -> FollowOn:
    """The statement that appends an audit event for each row a batch moved:
    `Transitions.move_many(..., then=audit_moved(...))` writes them in the very statement
    that moves the rows, in the scope it runs in (each row's tenant's, as RLS requires
    of every insert).

    `action` and `object_repr` are texts with the moved row's values named in braces
    (`"asset.{status}"`); `changes` is `{field: [before, after]}` of plain values and
    `Moved` values.
    """
    actor = actor or SYSTEM_ACTOR
    meta, quote = model._meta, connection.ops.quote_name
    params: list = []
    reads: set[str] = set()

    def column(name: str) -> str:
        try:
            field = meta.get_field(name)
        except FieldDoesNotExist:  # a member the batch carried
            return f"moved.{quote(name)}"
        reads.add(field.name)
        return f"moved.{quote(field.column)}"

    def constant(value, cast: str = "text") -> str:
        params.append(value)
        return f"%s::{cast}"

    def typed(name: str, value) -> str:
        return constant(value, AuditEvent._meta.get_field(name).cast_db_type(connection))

    def text(template: str) -> str:
        parts = []
        for literal, name, _, _ in Formatter().parse(template):
            if literal:
                parts.append(constant(literal))
            if name:
                parts.append(f"{column(name)}::text")
        return f"concat({', '.join(parts)})"

    def value(member) -> str:
        if isinstance(member, Moved):
            return f"to_jsonb({column(member.name)})"
        return constant(json.dumps(member), "jsonb")

    # Each column's expression, by field name, in the order of their parameters.
    selected = {
        "occurred_at": typed("occurred_at", timezone.now()),
        "tenant": column("tenant"),
        "actor_user": typed("actor_user", getattr(actor.user, "pk", None)),
        "actor_service": typed("actor_service", getattr(actor.service_account, "pk", None)),
        "actor_label": constant(actor.label[:150]),
        "action": text(action),
        "object_type": constant(meta.label_lower),
        "object_id": f"{column(meta.pk.name)}::text",
        "object_repr": f"left({text(object_repr)}, 200)",
        "changes": "jsonb_build_object({})".format(
            ", ".join(
                f"{constant(name)}, jsonb_build_array({', '.join(map(value, pair))})"
                for name, pair in changes.items()
            )
        ),
        "request_id": constant(request_id.get()),
    }
    columns = ", ".join(quote(AuditEvent._meta.get_field(name).column) for name in selected)
    sql = (
        f"INSERT INTO {quote(AuditEvent._meta.db_table)} ({columns})"  # noqa: S608
        f" SELECT {', '.join(selected.values())} FROM moved"
    )
    return FollowOn(sql, params, reads)


REDACTED = "[redacted]"

# The rows one redaction batch may take, by what the caller asks for. Fixed fragments:
# no caller's text ever reaches the statement but as a parameter.
_OWNED = "tenant_id = %(t)s"
_PLATFORM = "tenant_id IS NULL"
_ABOUT_TENANT = "tenant_id IS NULL AND object_type = 'tenancy.tenant' AND object_id = %(a)s::text"
_BEFORE = " AND occurred_at < %(c)s"


def audit_redact_batch(*, owner, about_tenant=None, before=None, size: int) -> int:
    """Redact at most `size` not yet redacted audit entries in one short transaction;
    returns how many. Who acted, the object's name and the changed values are replaced
    (field names stay); the action, object and time remain.

    `owner` is the tenant whose entries these are (its id), or None for the platform's,
    each redacted in its own scope as RLS requires. `about_tenant` narrows the
    platform's entries to those about that tenant itself; `before` to entries older
    than a time.
    """
    if owner is None:
        which, scope = (_ABOUT_TENANT if about_tenant else _PLATFORM), system_scope
    else:
        which, scope = _OWNED, (lambda: tenant_scope(owner))
    if before is not None:
        which += _BEFORE
    params = {"t": str(owner), "a": str(about_tenant), "c": before, "r": REDACTED, "n": int(size)}
    table = AuditEvent._meta.db_table
    with scope(), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('steward.audit_redaction', 'on', true)")
        cursor.execute(
            f"""
            UPDATE {table} SET actor_label = %(r)s::text, actor_user_id = NULL,
                actor_service_id = NULL, object_repr = %(r)s::text,
                changes = (SELECT coalesce(jsonb_object_agg(key, to_jsonb(%(r)s::text)),
                                           '{{}}'::jsonb)
                           FROM jsonb_each(CASE jsonb_typeof(changes) WHEN 'object'
                                           THEN changes ELSE '{{}}'::jsonb END)),
                redacted_at = now()
            WHERE id IN (SELECT id FROM {table} WHERE redacted_at IS NULL AND {which}
                         ORDER BY id LIMIT %(n)s FOR UPDATE SKIP LOCKED)
            """,  # noqa: S608 - the table's name and fixed conditions only
            params,
        )
        return cursor.rowcount
