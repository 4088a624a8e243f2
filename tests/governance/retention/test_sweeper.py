"""Steward's own tables under the retention rules, as owners' data is: each holds one of
Steward's data classes, the rules naming the class decide it (set-up installs the
settings as default rules), a tenant's hold on the class or the whole tenant keeps its
rows, and the sweep goes in bounded batches."""

import uuid
from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from django.utils import timezone
from guardian.shortcuts import assign_perm

from apps.assets.models import Asset, AssetUserObjectPermission
from apps.core.errors import ValidationFailed
from apps.core.models import IdempotencyRecord, ScheduledJob
from apps.core.scope import system_scope, tenant_scope
from apps.core.setup import SetupReport
from apps.eventing.models import DeadLetter, InboxEntry, RecentEvent
from apps.governance import install
from apps.governance.models import ExportArtifact, ExportChunk, RetentionRule
from apps.governance.orders import archive_store
from apps.governance.retention import selectors, services, sweeper
from apps.tenancy.models import AuditEvent, DataClass
from portal.celery import app
from tests.assets.factories import new_asset
from tests.governance.factories import NIGHT, dead_letter, export_row, inbox, store_file
from tests.support import run_concurrently, wait_for

pytestmark = pytest.mark.django_db


def own_class(slug):
    return DataClass.objects.get(slug=slug)


def idempotency_records(n, *, age, now=NIGHT, prefix="k"):
    IdempotencyRecord.objects.bulk_create(
        IdempotencyRecord(
            caller="c",
            key=f"{prefix}-{i}",
            method="POST",
            path="/",
            request_digest="d",
            created_at=now - age,
        )
        for i in range(n)
    )


def test_set_up_installs_the_settings_as_rules_once_and_keeps_an_operators_change(
    own_rules, op, settings
):
    assert own_rules["steward-event-receipts"].period_days == 3  # 72 h
    assert own_rules["steward-dead-letters"].period_days == (
        settings.STEWARD_RETENTION_DEAD_LETTERS_DAYS
    )
    assert own_rules["steward-idempotency-answers"].period_days == 1  # 24 h
    assert own_rules["steward-export-archives"].period_days == 7  # 168 h
    # no default for the audit trail, assets, receipts or effects: kept until a rule says
    assert "steward-audit-trail" not in own_rules
    services.rule_delete(actor=op, rule=own_rules["steward-dead-letters"])
    services.rule_update(actor=op, rule=own_rules["steward-event-receipts"], period_days=9)
    install.install_reference_data(SetupReport())
    assert not RetentionRule.objects.filter(name="steward-dead-letters").exists()
    assert RetentionRule.objects.get(name="steward-event-receipts").period_days == 9


def test_stewards_own_tables_are_swept_in_bounded_batches(own_rules, tenant_a, tenant_b, settings):
    settings.STEWARD_RETENTION_SWEEP_BATCH = 10
    settings.STEWARD_RETENTION_SWEEP_BATCH_MAX = 10  # no batch grows past 10 rows
    window = own_rules["steward-event-receipts"].period_days * 24
    inbox(tenant_a, window + 1, n=25)
    inbox(tenant_b, window + 5, n=7)
    inbox(tenant_a, window - 1, n=3)  # inside the window: kept
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
    idempotency_records(1, age=timedelta(days=1, minutes=1), prefix="old")
    idempotency_records(1, age=timedelta(hours=23), prefix="new")

    sweep = services.sweep_run(now=NIGHT)

    tables = sweep.results["tables"]
    assert tables["eventing.InboxEntry"]["rows"] == 32, tables
    assert tables["eventing.InboxEntry"]["rule"] == "steward-event-receipts"
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
    assert list(IdempotencyRecord.objects.values_list("key", flat=True)) == ["new-0"]


def test_a_rule_not_a_setting_decides_a_steward_table(own_rules, op, tenant_a, settings):
    inbox(tenant_a, 5 * 24, n=2)  # five days old: past the 72 h the setting said
    inbox(tenant_a, 11 * 24, n=3)
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "INBOX_RETENTION_HOURS": 1}
    services.rule_update(actor=op, rule=own_rules["steward-event-receipts"], period_days=10)

    tables = services.sweep_run(now=NIGHT).results["tables"]

    assert (tables["eventing.InboxEntry"]["rule"], tables["eventing.InboxEntry"]["rows"]) == (
        "steward-event-receipts",
        3,
    )
    with tenant_scope(tenant_a):
        assert InboxEntry.objects.count() == 2


def test_the_longest_rule_naming_the_class_wins_and_without_one_the_rows_are_kept(
    own_rules, op, tenant_a
):
    inbox(tenant_a, 20 * 24, n=2)
    services.rule_create(
        actor=op,
        name="receipts-for-audit",
        period_days=30,
        action="delete",
        data_class=own_class("steward-event-receipts"),
    )
    inbox_table = services.sweep_run(now=NIGHT).results["tables"]["eventing.InboxEntry"]
    assert (inbox_table["rule"], inbox_table["rows"]) == ("receipts-for-audit", 0)
    for name in ("receipts-for-audit", "steward-event-receipts"):
        services.rule_delete(actor=op, rule=RetentionRule.objects.get(name=name))
    preview = {t["table"]: t for t in selectors.sweep_preview(now=NIGHT)["own_tables"]}
    assert preview["eventing.InboxEntry"]["rule"] is None
    assert "kept" in preview["eventing.InboxEntry"]["decided_by"]
    tables = services.sweep_run(now=NIGHT + timedelta(days=1)).results["tables"]
    assert tables["eventing.InboxEntry"]["rows"] == 0
    with tenant_scope(tenant_a):
        assert InboxEntry.objects.count() == 2


def test_holds_on_the_tenant_or_the_class_keep_its_rows_and_a_store_hold_does_not(
    own_rules, op, tenant_a, tenant_b, store
):
    window = own_rules["steward-event-receipts"].period_days * 24
    inbox(tenant_a, window + 1, n=4)
    inbox(tenant_b, window + 1, n=4)
    dead_letter(tenant_a, "replayed", 40)
    services.hold_place(
        actor=op,
        tenant=tenant_a,
        reason="receipts are evidence in a dispute",
        data_class=own_class("steward-event-receipts"),
    )
    services.hold_place(actor=op, tenant=tenant_b, reason="one store only", store=store)

    preview = {t["table"]: t for t in selectors.sweep_preview(now=NIGHT)["own_tables"]}
    assert preview["eventing.InboxEntry"]["held_tenants"] == [tenant_a.slug]
    assert preview["eventing.InboxEntry"]["rows"] == 4
    tables = services.sweep_run(now=NIGHT).results["tables"]

    assert (
        tables["eventing.InboxEntry"]["rows"],
        tables["eventing.InboxEntry"]["held_tenants"],
    ) == (
        4,
        1,
    )
    assert tables["eventing.DeadLetter"]["rows"] == 1  # the hold names the receipts only
    with tenant_scope(tenant_a):
        assert InboxEntry.objects.count() == 4
    with tenant_scope(tenant_b):
        assert InboxEntry.objects.count() == 0


def test_a_tenant_wide_hold_keeps_the_tenants_rows_in_every_steward_table(
    own_rules, op, tenant_a, tenant_b
):
    window = own_rules["steward-event-receipts"].period_days * 24
    inbox(tenant_a, window + 1, n=4)
    inbox(tenant_b, window + 1, n=4)
    dead_letter(tenant_a, "replayed", 40)
    services.hold_place(actor=op, tenant=tenant_a, reason="whole tenant on hold")
    tables = services.sweep_run(now=NIGHT).results["tables"]
    assert tables["eventing.InboxEntry"]["rows"] == 4
    assert tables["eventing.InboxEntry"]["held_tenants"] == 1
    assert tables["eventing.DeadLetter"]["rows"] == 0
    with tenant_scope(tenant_a):
        assert InboxEntry.objects.count() == 4


def test_a_rule_redacts_the_audit_trail_and_may_not_delete_it(op, own_rules, tenant_a, tenant_b):
    audit = own_class("steward-audit-trail")
    with pytest.raises(ValidationFailed) as refused:
        services.rule_create(
            actor=op, name="audit-gone", period_days=30, action="delete", data_class=audit
        )
    assert refused.value.code == "retention_action_unsupported"
    assert not RetentionRule.objects.filter(name="audit-gone").exists()
    services.rule_create(
        actor=op, name="audit-redacted", period_days=30, action="redact", data_class=audit
    )
    for tenant in (tenant_a, tenant_b):
        with tenant_scope(tenant):
            AuditEvent.objects.bulk_create(
                AuditEvent(
                    tenant=tenant,
                    occurred_at=NIGHT - timedelta(days=age),
                    actor_label="ada@example.com",
                    action="test.touch",
                    object_type="tenancy.tenant",
                    object_id=str(tenant.pk),
                    object_repr=tenant.slug,
                    changes={"name": ["before", "after"]},
                )
                for age in (40, 41, 10)
            )
    services.hold_place(actor=op, tenant=tenant_b, reason="audit of b is evidence")

    tables = services.sweep_run(now=NIGHT).results["tables"]

    assert tables["tenancy.AuditEvent"]["action"] == "redact"
    with tenant_scope(tenant_a):
        redacted = AuditEvent.objects.filter(action="test.touch", redacted_at__isnull=False)
        assert redacted.count() == 2
        assert {e.actor_label for e in redacted} == {"[redacted]"}
        assert {tuple(e.changes) for e in redacted} == {("name",)}
        assert AuditEvent.objects.get(action="test.touch", redacted_at=None).actor_label == (
            "ada@example.com"
        )
    with tenant_scope(tenant_b):
        assert not AuditEvent.objects.filter(action="test.touch", redacted_at__isnull=False)


def test_a_rule_deletes_decided_assets_with_their_permissions(op, own_rules, tenant_a, operator):
    services.rule_create(
        actor=op,
        name="old-assets",
        period_days=30,
        action="delete",
        data_class=own_class("steward-assets"),
    )
    old_rejected, recent_rejected, old_approved = (new_asset(tenant_a, n) for n in "abc")
    with tenant_scope(tenant_a):
        assign_perm("assets.view_asset", operator, old_rejected)
        Asset.objects.filter(pk__in=[old_rejected.pk, recent_rejected.pk]).update(status="rejected")
        Asset.objects.filter(pk=old_approved.pk).update(status="approved")
        Asset.objects.filter(pk__in=[old_rejected.pk, old_approved.pk]).update(
            updated_at=NIGHT - timedelta(days=40)
        )
        Asset.objects.filter(pk=recent_rejected.pk).update(updated_at=NIGHT - timedelta(days=10))

    tables = services.sweep_run(now=NIGHT).results["tables"]

    assert tables["assets.Asset"]["rows"] == 1
    with tenant_scope(tenant_a):
        assert set(Asset.objects.values_list("pk", flat=True)) == {
            recent_rejected.pk,
            old_approved.pk,
        }
        assert not AssetUserObjectPermission.objects.filter(content_object_id=old_rejected.pk)


def export_artifact(tenant, requester, *, days_old: int, name: str):
    """An archive of `days_old` days with its bytes in the export store."""
    order = export_row(tenant, "completed", requester)
    store_file(order, name, b"archive")
    with tenant_scope(tenant):
        return ExportArtifact.objects.create(
            tenant=tenant,
            order=order,
            path=name,
            size=7,
            sha256="0" * 64,
            created_at=NIGHT - timedelta(days=days_old),
            expires_at=NIGHT - timedelta(days=days_old - 7),
        )


def stored_keys() -> set[str]:
    with system_scope():
        return set(ExportChunk.objects.values_list("key", flat=True))


def test_old_export_archives_lose_their_bytes_and_keep_their_record(
    op, own_rules, tenant_a, tenant_b
):
    kept_days = own_rules["steward-export-archives"].period_days
    old = export_artifact(tenant_a, op.user, days_old=kept_days + 1, name="archives/a-old.zip")
    fresh = export_artifact(tenant_a, op.user, days_old=kept_days - 1, name="archives/a-new.zip")
    held = export_artifact(tenant_b, op.user, days_old=kept_days + 1, name="archives/b-old.zip")
    # a record whose bytes are gone already is marked all the same
    gone = export_artifact(tenant_a, op.user, days_old=kept_days + 2, name="archives/a-2.zip")
    with tenant_scope(tenant_a):
        archive_store.delete_files([gone.path])
    services.hold_place(actor=op, tenant=tenant_b, reason="b is in litigation")

    sweep = services.sweep_run(now=NIGHT)

    result = sweep.results["tables"]["governance.ExportArtifact"]
    assert (result["rows"], result["files_removed"], result["held_tenants"]) == (2, 1, 1)
    assert stored_keys() == {"archives/a-new.zip", "archives/b-old.zip"}
    with system_scope():
        marked = dict(ExportArtifact.objects.values_list("pk", "deleted_at"))
    assert marked[old.pk] is not None and marked[gone.pk] is not None
    assert marked[fresh.pk] is None and marked[held.pk] is None


def test_bundles_an_order_left_behind_expire_and_a_running_orders_wait(op, own_rules, tenant_a):
    kept_days = own_rules["steward-export-archives"].period_days
    orders = {status: export_row(tenant_a, status, op.user) for status in ("cancelled", "running")}
    for status, order in orders.items():
        store_file(order, archive_store.bundle_key(order.pk, f"{status}.jsonl"), b'{"a": 1}\n')
    with tenant_scope(tenant_a):
        ExportChunk.objects.update(created_at=NIGHT - timedelta(days=kept_days + 1))

    sweep = services.sweep_run(now=NIGHT)

    assert sweep.results["tables"]["governance.ExportChunk"]["rows"] == 1
    assert stored_keys() == {archive_store.bundle_key(orders["running"].pk, "running.jsonl")}


def test_the_preview_names_the_rule_deciding_each_steward_table(own_rules, tenant_a):
    inbox(tenant_a, 4 * 24, n=2)
    preview = selectors.sweep_preview(now=NIGHT)
    rows = {t["table"]: t for t in preview["own_tables"]}
    assert set(rows) == {table.label for table in sweeper.OWN_TABLES}
    assert rows["eventing.InboxEntry"]["rule"] == "steward-event-receipts"
    assert rows["eventing.InboxEntry"]["rows"] == 2
    assert rows["tenancy.AuditEvent"]["rule"] is None
    with tenant_scope(tenant_a):
        assert InboxEntry.objects.count() == 2  # the preview changes nothing


@pytest.mark.django_db(transaction=True)
def test_two_hourly_sweeps_at_once_share_the_work_without_error(own_rules):
    idempotency_records(2400, age=timedelta(days=2), now=timezone.now())
    results, errors = run_concurrently(services.own_tables_sweep_now, 2)
    assert errors == []
    assert sum(r["core.IdempotencyRecord"]["rows"] for r in results) == 2400
    assert IdempotencyRecord.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_runs_the_hourly_sweep_of_stewards_tables(own_rules):
    idempotency_records(5, age=timedelta(days=2), now=timezone.now())
    idempotency_records(2, age=timedelta(hours=1), now=timezone.now(), prefix="fresh")
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["periodic"], shutdown_timeout=30
    ):
        app.send_task(install.OWN_TABLES_SWEEP, queue="periodic")
        wait_for(
            lambda: ScheduledJob.objects.filter(
                name="governance.sweep_own_tables", last_succeeded_at__isnull=False
            ).exists(),
            timeout=60,
        )
    assert sorted(IdempotencyRecord.objects.values_list("key", flat=True)) == [
        "fresh-0",
        "fresh-1",
    ]


def test_a_hourly_sweep_is_decided_by_the_rules_too(own_rules, op, tenant_a):
    services.rule_update(actor=op, rule=own_rules["steward-idempotency-answers"], period_days=5)
    idempotency_records(3, age=timedelta(days=2), now=timezone.now())
    assert services.own_tables_sweep_now()["core.IdempotencyRecord"]["rows"] == 0
    assert IdempotencyRecord.objects.count() == 3
