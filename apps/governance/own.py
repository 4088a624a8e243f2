"""Steward as an owner: deleting, redacting and exporting its own tables for a tenant.

Steward's tasks are done by a worker (apps.governance.tasks) and completed with a
receipt like any owner's. Rows go in bounded batches, each its own short transaction
in the tenant's scope, through the ORM so that Django's cascades (object permissions)
follow. The audit trail is redacted, never deleted: the entries stay with their
action, object and time, their personal columns replaced.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from django.apps import apps
from django.conf import settings
from django.core.serializers.json import DjangoJSONEncoder
from django.db import connection, transaction
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from apps.governance import coverage
from apps.governance.models import ExportArtifact, GovernanceTask
from apps.tenancy.models import AuditEvent, Tenant

BATCH = 2000
REDACTED = "[redacted]"
# Outbox rows leave the table as they are dispatched; deleting one would lose the
# event (this order's own tasks among them), so Steward's deletion leaves them to go.
NOT_DELETED = {"eventing.OutboxEvent", "tenancy.AuditEvent"}


def tenant_field(model) -> str:
    return next(
        f.name for f in model._meta.concrete_fields if f.many_to_one and f.related_model is Tenant
    )


def _in_delete_order(labels: list[str]) -> list:
    """Models ordered so that one pointing at another goes first."""
    models = [apps.get_model(label) for label in labels]
    ordered: list = []

    def visit(model, seen=()):
        if model in ordered:
            return
        for other in models:
            if other is not model and other not in seen and _points_at(other, model):
                visit(other, (*seen, model))
        ordered.append(model)

    for model in sorted(models, key=lambda m: m._meta.label):
        visit(model)
    return ordered


def _points_at(model, target) -> bool:
    return any(f.many_to_one and f.related_model is target for f in model._meta.concrete_fields)


def delete_rows(model, tenant_id) -> int:
    field = tenant_field(model)
    total = 0
    while True:
        with tenant_scope(tenant_id):
            pks = list(
                model.objects.filter(**{f"{field}_id": tenant_id})
                .order_by("pk")
                .values_list("pk", flat=True)[:BATCH]
            )
            if not pks:
                return total
            model.objects.filter(pk__in=pks).delete()
            total += len(pks)


def redact_audit(tenant_id) -> int:
    """Replace the personal data of the tenant's audit entries: who acted, the object's
    name and the changed values (their field names stay). Through the audit trail's one
    redaction door (migration tenancy 0003), in batches: the tenant's own entries in its
    scope, then the platform's entries about the tenant itself."""
    own_entries = _redact(lambda: tenant_scope(tenant_id), "tenant_id = %(t)s", tenant_id)
    about_it = _redact(
        system_scope,
        "tenant_id IS NULL AND object_type = 'tenancy.tenant' AND object_id = %(t)s::text",
        tenant_id,
    )
    return own_entries + about_it


def _redact(scope, which: str, tenant_id) -> int:
    table = AuditEvent._meta.db_table
    total = 0
    while True:
        with scope(), connection.cursor() as cursor:
            cursor.execute("SELECT set_config('steward.audit_redaction', 'on', true)")
            cursor.execute(
                f"""
                UPDATE {table} SET actor_label = %(r)s, actor_user_id = NULL,
                    actor_service_id = NULL, object_repr = %(r)s,
                    changes = (SELECT coalesce(jsonb_object_agg(key, to_jsonb(%(r)s::text)),
                                               '{{}}'::jsonb)
                               FROM jsonb_each(CASE jsonb_typeof(changes) WHEN 'object'
                                               THEN changes ELSE '{{}}'::jsonb END)),
                    redacted_at = now()
                WHERE id IN (SELECT id FROM {table} WHERE redacted_at IS NULL AND {which}
                             ORDER BY id LIMIT %(n)s)
                """,  # noqa: S608 - table name and a fixed condition only
                {"r": REDACTED, "t": str(tenant_id), "n": BATCH},
            )
            if not cursor.rowcount:
                return total
            total += cursor.rowcount


def delete_export_files(tenant_id) -> int:
    """Delete the files of the tenant's export archives; their records stay."""
    with tenant_scope(tenant_id):
        artifacts = list(ExportArtifact.objects.filter(tenant_id=tenant_id, deleted_at=None))
        for artifact in artifacts:
            delete_artifact_file(artifact)
    return len(artifacts)


def delete_artifact_file(artifact: ExportArtifact) -> None:
    """Remove an archive's file and mark its record (the caller's tenant scope)."""
    (Path(settings.STEWARD_EXPORT_DIR) / artifact.path).unlink(missing_ok=True)
    ExportArtifact.objects.filter(pk=artifact.pk).update(deleted_at=timezone.now())


def retire_bindings(tenant_id) -> int:
    """Retire the tenant's live store bindings and revoke their credentials now."""
    from apps.stores import services as stores
    from apps.stores.models import LIVE_STATUSES, StoreBinding

    with tenant_scope(tenant_id):
        bindings = list(StoreBinding.objects.filter(tenant_id=tenant_id, status__in=LIVE_STATUSES))
    for binding in bindings:
        if binding.status == StoreBinding.Status.REQUESTED:
            raise RuntimeError(
                f"Binding {binding.pk} is still being provisioned; retry once it has settled."
            )
        if binding.status != StoreBinding.Status.RETIRING:
            stores.binding_retire(actor=SYSTEM_ACTOR, binding=binding, reason="tenant deletion")
        if stores.binding_revoke(binding_id=binding.pk) == "retry":
            raise RuntimeError(f"The credentials of binding {binding.pk} could not be revoked.")
    return len(bindings)


def _item(what: str, action: str, count: int) -> dict:
    return {"what": what, "action": action, "count": count}


def perform(task: GovernanceTask) -> list[dict]:
    """Do Steward's part of a deletion phase; the receipt's items."""
    from apps.governance.phases import phase

    step = phase(task.order, task.phase)
    labels = [
        label
        for label, c in coverage.GOVERNED.items()
        if c.phase == step.steward_coverage and label not in NOT_DELETED
    ]
    items = []
    if step.slug == "authoritative":
        items.append(_item("export archives", "deleted", delete_export_files(task.tenant_id)))
    if step.slug == "subscription":
        items.append(
            _item("stores.StoreBinding credentials", "revoked", retire_bindings(task.tenant_id))
        )
    if step.slug == "audit":
        items.append(_item("tenancy.AuditEvent", "redacted", redact_audit(task.tenant_id)))
    for model in _in_delete_order(labels):
        items.append(_item(model._meta.label, "deleted", delete_rows(model, task.tenant_id)))
    if step.slug == "derived":
        items.append(_item("eventing.OutboxEvent", "left to dispatch", 0))
    return items


def receipt_digest(items: list) -> str:
    body = json.dumps(items, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(body.encode()).hexdigest()


# ------------------------------------------------------------------ export


def redacted_audit_row(row: dict) -> dict:
    changes = row.get("changes")
    return {
        **row,
        "actor_label": REDACTED,
        "actor_user_id": None,
        "actor_service_id": None,
        "object_repr": REDACTED,
        "changes": {k: REDACTED for k in changes} if isinstance(changes, dict) else {},
    }


def export_bundles(task: GovernanceTask, directory: Path) -> list[dict]:
    """Write one JSON Lines file per exported table of the tenant into `directory`;
    the audit trail redacted. Returns the bundles' descriptions."""
    bundles = []
    for label in sorted(label for label, c in coverage.GOVERNED.items() if c.exported):
        model = apps.get_model(label)
        field = tenant_field(model)
        path = directory / f"steward-{label}.jsonl"
        digest, size, rows = hashlib.sha256(), 0, 0
        with path.open("wb") as out, tenant_scope(task.tenant_id), transaction.atomic():
            query = model.objects.filter(**{f"{field}_id": task.tenant_id}).order_by("pk")
            for row in query.values().iterator(chunk_size=BATCH):
                if model is AuditEvent:
                    row = redacted_audit_row(row)
                line = (json.dumps(row, cls=DjangoJSONEncoder, sort_keys=True) + "\n").encode()
                out.write(line)
                digest.update(line)
                size += len(line)
                rows += 1
        bundles.append(
            {
                "owner": "steward",
                "store": "steward",
                "name": label,
                "format": "jsonl",
                "path": str(path.relative_to(settings.STEWARD_EXPORT_DIR)),
                "rows": rows,
                "bytes": size,
                "sha256": digest.hexdigest(),
            }
        )
    return bundles
