"""Steward's own expirable tables, swept in bounded batches; a tenant-wide hold keeps
the tenant's rows; expired export archives lose their file and keep their record."""

import uuid
from datetime import timedelta

import pytest

from apps.core.models import IdempotencyRecord
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import DeadLetter, InboxEntry, RecentEvent
from apps.governance.models import ExportArtifact, GovernanceOrder
from apps.governance.retention import services
from tests.governance.factories import NIGHT, dead_letter, inbox

pytestmark = pytest.mark.django_db


def test_stewards_own_tables_are_swept_in_bounded_batches(tenant_a, tenant_b, settings):
    settings.STEWARD_RETENTION_SWEEP_BATCH = 10
    settings.STEWARD_RETENTION_SWEEP_BATCH_MAX = 10  # no batch grows past 10 rows
    window = settings.STEWARD_EVENTING["INBOX_RETENTION_HOURS"]
    inbox(tenant_a, window + 1, n=25)
    inbox(tenant_b, window + 5, n=7)
    inbox(tenant_a, window - 1, n=3)  # inside the dedup window: kept
    with tenant_scope(tenant_a):
        RecentEvent.objects.create(
            event_id=uuid.uuid4(),
            topic="t",
            event_type="E",
            tenant=tenant_a,
            aggregate_type="a",
            aggregate_id="1",
            occurred_at=NIGHT,
            received_at=NIGHT - timedelta(hours=window + 1),
        )
    kept_dead = dead_letter(tenant_a, "dead", None)
    replayed_recently = dead_letter(tenant_a, "replayed", 2)
    dead_letter(tenant_a, "replayed", 40)
    dead_letter(tenant_b, "discarded", 31)
    ttl = settings.STEWARD_IDEMPOTENCY_TTL
    for age, key in ((ttl + timedelta(minutes=1), "old"), (ttl - timedelta(minutes=1), "new")):
        IdempotencyRecord.objects.create(
            caller="c",
            key=key,
            method="POST",
            path="/",
            request_digest="d",
            created_at=NIGHT - age,
        )

    sweep = services.sweep_run(now=NIGHT)

    tables = sweep.results["tables"]
    assert tables["eventing.InboxEntry"]["rows"] == 32, tables
    # tenant_a's 25 rows take three batches of 10 (the last one short), tenant_b's one
    assert tables["eventing.InboxEntry"]["batches"] == 4, tables
    assert tables["eventing.DeadLetter"]["rows"] == 2
    assert tables["core.IdempotencyRecord"]["rows"] == 1
    assert tables["eventing.RecentEvent"]["rows"] == 1
    assert sweep.results["rows_purged"] == 36 and sweep.results["max_lock_ms"] > 0
    with system_scope():
        assert InboxEntry.objects.count() == 3
        assert set(DeadLetter.objects.values_list("pk", flat=True)) == {
            kept_dead.pk,
            replayed_recently.pk,
        }
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new"]


def test_a_tenant_wide_hold_keeps_the_tenants_rows_in_stewards_tables(
    op, tenant_a, tenant_b, settings
):
    window = settings.STEWARD_EVENTING["INBOX_RETENTION_HOURS"]
    inbox(tenant_a, window + 1, n=4)
    inbox(tenant_b, window + 1, n=4)
    services.hold_place(actor=op, tenant=tenant_a, reason="whole tenant on hold")
    sweep = services.sweep_run(now=NIGHT)
    assert sweep.results["tables"]["eventing.InboxEntry"]["rows"] == 4
    assert sweep.results["tables"]["eventing.InboxEntry"]["held_tenants"] == 1
    with tenant_scope(tenant_a):
        assert InboxEntry.objects.count() == 4


def export_artifact(tenant, requester, export_dir, *, expired: bool, name: str):
    (export_dir / name).write_bytes(b"archive")
    with tenant_scope(tenant):
        order = GovernanceOrder.objects.create(
            tenant=tenant, kind="export", reason="r", requested_by=requester, approvals_needed=1
        )
        return ExportArtifact.objects.create(
            tenant=tenant,
            order=order,
            path=name,
            size=7,
            sha256="0" * 64,
            expires_at=NIGHT + timedelta(days=-1 if expired else 1),
        )


def test_expired_export_artifacts_lose_their_file_and_keep_their_record(
    op, tenant_a, tenant_b, tmp_path, settings
):
    exports = tmp_path / "exports"
    exports.mkdir(exist_ok=True)
    settings.STEWARD_EXPORT_DIR = str(exports)
    expired = export_artifact(tenant_a, op.user, exports, expired=True, name="a-old.tar.gz")
    fresh = export_artifact(tenant_a, op.user, exports, expired=False, name="a-new.tar.gz")
    held = export_artifact(tenant_b, op.user, exports, expired=True, name="b-old.tar.gz")
    # a record pointing outside the export directory never deletes what it points at
    (tmp_path / "elsewhere.txt").write_bytes(b"not an export")
    with tenant_scope(tenant_a):
        ExportArtifact.objects.filter(pk=expired.pk).update(path="../elsewhere.txt")
    outside = export_artifact(tenant_a, op.user, exports, expired=True, name="a-2.tar.gz")
    services.hold_place(actor=op, tenant=tenant_b, reason="b is in litigation")

    sweep = services.sweep_run(now=NIGHT)

    result = sweep.results["tables"]["governance.ExportArtifact"]
    assert (result["rows"], result["files_removed"], result["held_tenants"]) == (2, 1, 1)
    assert sorted(p.name for p in exports.iterdir()) == [
        "a-new.tar.gz",
        "a-old.tar.gz",
        "b-old.tar.gz",
    ]
    assert (tmp_path / "elsewhere.txt").exists()
    with system_scope():
        marked = dict(ExportArtifact.objects.values_list("pk", "deleted_at"))
    assert marked[expired.pk] == marked[outside.pk] == NIGHT
    assert marked[fresh.pk] is None and marked[held.pk] is None
