"""Steward's part of a deletion: the audit trail redacted, every entry kept; the
tenant's export bundles and archives gone from the export store."""

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection
from django.utils import timezone

from apps.core.scope import system_scope, tenant_scope
from apps.governance.models import ExportArtifact, ExportChunk
from apps.governance.orders import archive_store
from apps.governance.steward_owner import deletion
from apps.tenancy.models import AuditEvent
from tests.factories import member
from tests.governance.factories import approved, complete, export_row, open_tasks, store_file

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_cooling_off")]


def test_audit_redaction_keeps_every_entry_and_replaces_personal_data(bound, tenant_a):
    order = approved(tenant_a)
    with tenant_scope(tenant_a):
        before = AuditEvent.objects.filter(tenant=tenant_a).count()
        assert AuditEvent.objects.filter(tenant=tenant_a, actor_label="req-deletion").exists()
    for number in (1, 2, 3):
        for task in open_tasks(order, number):
            complete(task)
    with tenant_scope(tenant_a):
        entries = list(AuditEvent.objects.filter(tenant=tenant_a))
        redacted = [e for e in entries if e.redacted_at is not None]
    assert len(redacted) >= before > 0  # kept; entries written during the run are there too
    assert {e.actor_label for e in redacted} == {"[redacted]"}
    assert all(e.actor_user_id is None and e.object_repr == "[redacted]" for e in redacted)
    assert all(set(e.changes.values()) <= {"[redacted]"} for e in redacted)
    # outside the redaction door the audit trail is still append-only
    with pytest.raises(DatabaseError), tenant_scope(tenant_a), connection.cursor() as cursor:
        cursor.execute("UPDATE tenancy_auditevent SET actor_label = 'x'")
    with pytest.raises(DatabaseError), tenant_scope(tenant_a), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('steward.audit_redaction', 'on', true)")
        cursor.execute("DELETE FROM tenancy_auditevent")


def exported(tenant):
    """An export of `tenant` with its archive stored, and a second still running with a
    bundle stored."""
    requester = member(tenant, role="admin")
    done, running = (export_row(tenant, status, requester) for status in ("completed", "running"))
    store_file(done, f"archives/{tenant.slug}.zip", b"PK archive " * 200_000)  # 2 chunks
    with tenant_scope(tenant):
        ExportArtifact.objects.create(
            tenant=tenant,
            order=done,
            path=f"archives/{tenant.slug}.zip",
            size=2_200_000,
            sha256="0" * 64,
            expires_at=timezone.now() + timedelta(days=1),
        )
    store_file(running, archive_store.bundle_key(running.pk, "orders.jsonl"), b'{"a": 1}\n')
    return done


def chunk_tenants() -> set:
    with system_scope():
        return set(ExportChunk.objects.values_list("tenant_id", flat=True))


def test_a_tenants_deletion_removes_its_export_bytes_and_keeps_the_record(tenant_a, tenant_b):
    kept = exported(tenant_b)
    exported(tenant_a)
    assert chunk_tenants() == {tenant_a.pk, tenant_b.pk}

    assert deletion.delete_export_files(tenant_a.pk) == 1

    assert chunk_tenants() == {tenant_b.pk}
    with system_scope():
        records = {a.tenant_id: a for a in ExportArtifact.objects.all()}
    assert records[tenant_a.pk].deleted_at is not None and not records[tenant_a.pk].available
    assert records[tenant_b.pk].deleted_at is None and records[tenant_b.pk].order_id == kept.pk


def test_one_tenants_scope_never_reaches_anothers_export_bytes(tenant_a, tenant_b):
    exported(tenant_b)
    with tenant_scope(tenant_a):
        assert not ExportChunk.objects.exists()
        assert (
            archive_store.delete_files(ExportArtifact.objects.values_list("path", flat=True)) == 0
        )
    with system_scope():
        order_id = ExportChunk.objects.values_list("order_id", flat=True).first()
    # the store writes in the caller's scope: another tenant's chunk is refused there
    writer = archive_store.FileWriter(tenant_id=tenant_b.pk, order_id=order_id, key="x")
    with pytest.raises(DatabaseError), tenant_scope(tenant_a):
        writer.close()
    # closed all the same: the garbage collector's close() must not try the write again
    # in another test's (or request's) transaction
    assert writer.closed
    assert chunk_tenants() == {tenant_b.pk}
