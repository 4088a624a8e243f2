"""Steward's part of a deletion phase: deleting, redacting and releasing what its own
tables hold of the tenant.

Rows go in bounded batches, each its own short transaction in the tenant's scope,
through the ORM so that Django's cascades (object permissions) follow. The audit trail
is redacted, never deleted: the entries stay with their action, object and time, their
personal columns replaced.
"""

from __future__ import annotations

import hashlib
import json

from django.apps import apps
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.core.governed import RELEASE
from apps.core.scope import tenant_scope
from apps.governance import coverage
from apps.governance.models import ExportArtifact, GovernanceTask
from apps.governance.orders import archive_store, phases
from apps.stores import services as stores
from apps.stores.models import LIVE_STATUSES, StoreBinding
from apps.stores.selectors import live_binding_list
from apps.tenancy.audit import audit_redact_batch

BATCH = 2000
# Outbox rows leave the table as they are dispatched; deleting one would lose the
# event (this order's own tasks among them), so Steward's deletion leaves them to go.
NOT_DELETED = {"eventing.OutboxEvent", "tenancy.AuditEvent"}


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
    field = coverage.tenant_field_of(model)
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
    redaction door, in batches: the tenant's own entries in its scope, then the
    platform's entries about the tenant itself."""
    own_entries = _redact_all(owner=tenant_id)
    about_it = _redact_all(owner=None, about_tenant=tenant_id)
    return own_entries + about_it


def redact_audit_before(owner, cutoff, *, size: int = BATCH) -> int:
    """One batch of at most `size` of `owner`'s audit entries (None: the platform's)
    older than `cutoff` redacted, through the same door: what a retention rule naming
    Steward's audit trail asks. Its own short transaction; the rows redacted."""
    return audit_redact_batch(owner=owner, before=cutoff, size=size)


def _redact_all(**which) -> int:
    total = 0
    while redacted := audit_redact_batch(**which, size=BATCH):
        total += redacted
    return total


def delete_export_files(tenant_id) -> int:
    """Delete the tenant's export bundles and archives from the export store and mark
    the archives' records deleted (the records stay); the archives marked."""
    archive_store.delete_tenant_files(tenant_id)
    with tenant_scope(tenant_id):
        return ExportArtifact.objects.filter(tenant_id=tenant_id, deleted_at=None).update(
            deleted_at=timezone.now()
        )


def retire_bindings(tenant_id, order=None) -> int:
    """Retire the tenant's live store bindings and revoke their credentials now. A
    Requested one retires too: its provisioning is cancelled, so it never holds the
    data. A binding whose owner completed this order's deletion (or redaction) task
    records that receipt as its data gone, so no purge task is owed it afterwards."""
    with tenant_scope(tenant_id):
        bindings = list(live_binding_list().filter(tenant_id=tenant_id))
    for binding in bindings:
        if binding.status != StoreBinding.Status.RETIRING:
            stores.binding_retire(actor=SYSTEM_ACTOR, binding=binding, reason="tenant deletion")
        if stores.binding_revoke(binding_id=binding.pk) == "retry":
            raise RuntimeError(f"The credentials of binding {binding.pk} could not be revoked.")
        if order is not None:
            record_order_receipt(order, binding)
    return len(bindings)


def record_order_receipt(order, binding: StoreBinding) -> bool:
    """Record on a binding no longer live the receipt of this order's completed deletion
    (or redaction) task for it, as the proof its data is gone; False when there is
    none yet (or the binding still holds, or may come to hold, data)."""
    with tenant_scope(binding.tenant_id):
        task = (
            GovernanceTask.objects.filter(
                order=order,
                status=GovernanceTask.Status.COMPLETED,
                kind__in=[GovernanceTask.Kind.DELETE, GovernanceTask.Kind.REDACT],
                detail__binding=str(binding.pk),
            )
            .order_by("-settled_at")
            .first()
        )
        binding = StoreBinding.objects.get(pk=binding.pk)
    if task is None or binding.status in LIVE_STATUSES:
        return False
    stores.binding_record_data_purged(
        actor=SYSTEM_ACTOR, binding=binding, receipt=phases.purge_receipt(task)
    )
    return True


def delete_released_rows(tenant_id) -> list[dict]:
    """Delete the tenant's binding rows (the release phase's tables). Called once the
    order's evidence names every binding with its receipt or reason, never before: the
    rows are what that evidence is read from."""
    labels = coverage.tables_of_phase(RELEASE)
    return [
        _item(model._meta.label, "deleted", delete_rows(model, tenant_id))
        for model in _in_delete_order(labels)
    ]


def _item(what: str, action: str, count: int) -> dict:
    return {"what": what, "action": action, "count": count}


def carry_out_deletion_phase(task: GovernanceTask) -> list[dict]:
    """Do Steward's part of a deletion phase; the receipt's items."""
    step = phases.phase(task.order, task.phase)
    labels = [
        label
        for label in coverage.tables_of_phase(step.steward_coverage)
        if label not in NOT_DELETED
    ]
    items = []
    if step.slug == "authoritative":
        items.append(_item("export archives", "deleted", delete_export_files(task.tenant_id)))
    if step.slug == "subscription":
        items.append(
            _item(
                "stores.StoreBinding credentials",
                "revoked",
                retire_bindings(task.tenant_id, task.order),
            )
        )
    if step.slug == "audit":
        items.append(_item("tenancy.AuditEvent", "redacted", redact_audit(task.tenant_id)))
    if step.steward_coverage == RELEASE:
        # The binding rows are what the order's completion check reads to certify that
        # every store was reached: the order deletes them itself once its evidence names
        # each binding with its receipt or reason (delete_released_rows), not before.
        items += [_item(label, "kept until the evidence names each binding", 0) for label in labels]
        labels = []
    for model in _in_delete_order(labels):
        items.append(_item(model._meta.label, "deleted", delete_rows(model, task.tenant_id)))
    if step.slug == "derived":
        items.append(_item("eventing.OutboxEvent", "left to dispatch", 0))
    return items


def receipt_digest(items: list) -> str:
    body = json.dumps(items, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(body.encode()).hexdigest()
