"""Retention rules, legal holds and the nightly sweep, against the real database."""

import uuid
from datetime import UTC, datetime, timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection, transaction

from apps.core.context import Actor
from apps.core.errors import Conflict, ValidationFailed
from apps.core.models import IdempotencyRecord
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import DeadLetter, InboxEntry, OutboxEvent, RecentEvent
from apps.governance import retention_services as services
from apps.governance.models import GovernanceTask, LegalHold, RetentionRule, RetentionSweep
from apps.governance.retention import RuleLocked
from apps.governance.services import NotAllowed
from apps.registry.models import Service, Subscription, Topic
from apps.tenancy.models import AuditEvent
from tests.factories import member
from tests.governance.conftest import live_binding, make_store

pytestmark = pytest.mark.django_db

NIGHT = datetime(2026, 11, 30, 2, 30, tzinfo=UTC)


def audit_actions(prefix):
    with system_scope():
        return list(
            AuditEvent.objects.filter(action__startswith=prefix)
            .order_by("id")
            .values_list("action", flat=True)
        )


# --------------------------------------------------------------------------- rules


def test_an_operator_creates_a_rule_and_it_is_audited(op, personal, store):
    rule = services.rule_create(
        actor=op, name="personal-90", data_class=personal, period_days=90, action="delete"
    )
    assert rule.created_by == op.user and rule.enabled and not rule.locked
    assert audit_actions("retention_rule.") == ["retention_rule.create"]


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"period_days": 30, "action": "delete"}, "scope_required"),
        ({"period_days": 0, "action": "delete", "scope": "class"}, "invalid_period"),
        ({"period_days": 30, "action": "shred", "scope": "class"}, "invalid"),
        ({"period_days": 30, "action": "delete", "scope": "mismatch"}, "scope_mismatch"),
        (
            {
                "period_days": 30,
                "action": "delete",
                "scope": "class",
                "locked": True,
                "enabled": False,
            },
            "locked_rule_disabled",
        ),
        ({"period_days": 30, "action": "delete", "scope": "class", "name": " "}, "name_required"),
    ],
)
def test_bad_rules_are_refused_and_nothing_is_saved(op, personal, telemetry, store, fields, code):
    fields = dict(fields)
    scope = fields.pop("scope", None)
    if scope == "class":
        fields["data_class"] = personal
    elif scope == "mismatch":
        fields.update(store=store, data_class=telemetry)
    with pytest.raises(ValidationFailed) as refused:
        services.rule_create(actor=op, **{"name": "r", **fields})
    assert refused.value.code == code
    assert not RetentionRule.objects.exists() and audit_actions("retention_rule.") == []


def test_only_operators_manage_rules_and_names_are_unique(op, tenant_a, personal):
    admin = Actor(user=member(tenant_a, role="admin", username="an-admin"))
    with pytest.raises(NotAllowed):
        services.rule_create(
            actor=admin, name="r", data_class=personal, period_days=30, action="delete"
        )
    services.rule_create(actor=op, name="r", data_class=personal, period_days=30, action="delete")
    with pytest.raises(Conflict) as taken:
        services.rule_create(
            actor=op, name="r", data_class=personal, period_days=60, action="delete"
        )
    assert taken.value.code == "name_taken"


def locked_rule(op, personal):
    return services.rule_create(
        actor=op, name="kept", data_class=personal, period_days=30, action="archive", locked=True
    )


@pytest.mark.parametrize(
    ("change", "refused"),
    [
        ({"period_days": 29}, ["period_days"]),
        ({"enabled": False}, ["enabled"]),
        ({"locked": False}, ["locked"]),
        ({"action": "delete"}, ["action"]),
        ({"period_days": 365, "enabled": False}, ["enabled"]),
    ],
)
def test_a_locked_rule_refuses_change_and_nothing_changes(op, personal, change, refused):
    rule = locked_rule(op, personal)
    with pytest.raises(RuleLocked) as raised:
        services.rule_update(actor=op, rule=rule, **change)
    assert raised.value.code == "retention_rule_locked" and raised.value.extra["refused"] == refused
    stored = RetentionRule.objects.get(pk=rule.pk)
    assert (stored.period_days, stored.enabled, stored.locked, stored.action) == (
        30,
        True,
        True,
        "archive",
    )
    assert audit_actions("retention_rule.") == ["retention_rule.create"]


def test_a_locked_rule_can_be_lengthened_but_not_deleted(op, personal, store):
    rule = locked_rule(op, personal)
    rule = services.rule_update(actor=op, rule=rule, period_days=400)
    assert rule.period_days == 400
    with pytest.raises(RuleLocked):
        services.rule_update(actor=op, rule=rule, store=store)  # narrowing the scope
    with pytest.raises(RuleLocked) as deleting:
        services.rule_delete(actor=op, rule=rule)
    assert deleting.value.extra["refused"] == ["deleted"]
    assert RetentionRule.objects.filter(pk=rule.pk, period_days=400).exists()
    assert audit_actions("retention_rule.") == ["retention_rule.create", "retention_rule.update"]


def test_locking_is_one_way_and_an_unlocked_rule_changes_freely(op, personal):
    rule = services.rule_create(
        actor=op, name="free", data_class=personal, period_days=90, action="delete"
    )
    rule = services.rule_update(actor=op, rule=rule, period_days=7, enabled=False)
    rule = services.rule_update(actor=op, rule=rule, enabled=True, locked=True)
    with pytest.raises(RuleLocked):
        services.rule_update(actor=op, rule=rule, locked=False)
    assert RetentionRule.objects.get(pk=rule.pk).locked


def test_the_database_refuses_what_the_lock_forbids_even_past_the_service(op, personal):
    rule = locked_rule(op, personal)
    for statement in (
        "UPDATE governance_retentionrule SET period_days = 1 WHERE id = %s",
        "UPDATE governance_retentionrule SET locked = false WHERE id = %s",
        "UPDATE governance_retentionrule SET action = 'delete' WHERE id = %s",
        "DELETE FROM governance_retentionrule WHERE id = %s",
    ):
        with pytest.raises(DatabaseError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(statement, [rule.pk])
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE governance_retentionrule SET period_days = 31 WHERE id = %s", [rule.pk]
        )
    assert RetentionRule.objects.get(pk=rule.pk).period_days == 31


# --------------------------------------------------------------------------- holds


def test_a_tenant_admin_places_and_releases_a_hold_with_reasons(tenant_a, store):
    admin = Actor(user=member(tenant_a, role="admin", username="a-admin"))
    with pytest.raises(ValidationFailed) as no_reason:
        services.hold_place(actor=admin, tenant=tenant_a, reason="  ")
    assert no_reason.value.code == "reason_required"
    hold = services.hold_place(actor=admin, tenant=tenant_a, store=store, reason="litigation #42")
    assert hold.active and hold.created_by == admin.user
    with pytest.raises(ValidationFailed):
        services.hold_release(actor=admin, hold=hold, reason="")
    hold = services.hold_release(actor=admin, hold=hold, reason="case closed")
    assert not hold.active and hold.released_by == admin.user
    with pytest.raises(Conflict) as twice:
        services.hold_release(actor=admin, hold=hold, reason="again")
    assert twice.value.code == "hold_released"
    assert audit_actions("legal_hold.") == ["legal_hold.place", "legal_hold.release"]


def test_members_and_other_tenants_admins_may_not_hold(tenant_a, tenant_b, operator):
    plain = Actor(user=member(tenant_a, username="plain"))
    other_admin = Actor(user=member(tenant_b, role="admin", username="b-admin"))
    for who in (plain, other_admin):
        with pytest.raises(NotAllowed):
            services.hold_place(actor=who, tenant=tenant_a, reason="x")
    hold = services.hold_place(actor=Actor(user=operator), tenant=tenant_a, reason="regulator")
    with pytest.raises(NotAllowed):
        services.hold_release(actor=other_admin, hold=hold, reason="mine now")
    assert LegalHold.objects.count() == 0  # no scope: row-level security shows nothing
    with tenant_scope(tenant_b):
        assert not LegalHold.objects.exists()  # another tenant's scope neither
    with tenant_scope(tenant_a):
        assert LegalHold.objects.get().active


# --------------------------------------------------------------------------- the sweep


@pytest.fixture
def bound(tenant_a, tenant_b, store, profile, personal, telemetry):
    """tenant_a and tenant_b each bind knowledge-sql (personal); tenant_a also binds
    metrics-ts (telemetry, owned by the metrics service)."""
    metrics = make_store("metrics-ts", telemetry, owner="metrics")
    return {
        "a": live_binding(tenant_a, store, profile),
        "b": live_binding(tenant_b, store, profile, status="provisioned"),
        "a-metrics": live_binding(tenant_a, metrics, profile),
        "retired": live_binding(tenant_b, metrics, profile, status="retired"),
        "metrics": metrics,
    }


def purge_tasks():
    with system_scope():
        return list(
            GovernanceTask.objects.filter(kind="purge")
            .select_related("tenant", "store")
            .order_by("tenant__slug", "store__slug")
        )


def test_the_sweep_issues_purge_tasks_to_owning_services_with_due_dates(
    op, bound, personal, telemetry, store, settings
):
    settings.STEWARD_RETENTION_TASK_DUE_HOURS = 48
    services.rule_create(
        actor=op, name="personal-90", data_class=personal, period_days=90, action="delete"
    )
    services.rule_create(
        actor=op, name="knowledge-400", store=store, period_days=400, action="redact"
    )
    services.rule_create(
        actor=op,
        name="telemetry-30",
        data_class=telemetry,
        period_days=30,
        action="delete",
        enabled=False,
    )
    sweep = services.sweep_run(now=NIGHT)
    tasks = purge_tasks()
    # the retired binding gets nothing; telemetry's rule is disabled: uncovered
    assert [(t.tenant.slug, t.store.slug, t.owner) for t in tasks] == [
        ("alpha", "knowledge-sql", "knowledge"),
        ("bravo", "knowledge-sql", "knowledge"),
    ]
    for task in tasks:
        assert task.status == "issued" and task.due_at == NIGHT + timedelta(hours=48)
        assert task.detail["rule"] == "knowledge-400" and task.detail["action"] == "redact"
        assert task.detail["cutoff"] == (NIGHT - timedelta(days=400)).isoformat()
    with system_scope():  # each owner is told, on its task topic
        announced = OutboxEvent.objects.filter(event_type="GovernanceTaskIssued")
        assert sorted(e.payload["task"] for e in announced) == sorted(str(t.pk) for t in tasks)
        assert {e.topic for e in announced} == {"governance.tasks.knowledge"}
    assert sweep.status == "succeeded" and sweep.night == NIGHT.date()
    assert sweep.results["purge_tasks"]["issued"] == 2 and sweep.results["uncovered"] == 1
    assert "30 days" in sweep.results["traces"]


def test_a_hold_stops_the_purge_until_it_is_released(op, bound, personal, tenant_a, store):
    services.rule_create(actor=op, name="p", data_class=personal, period_days=90, action="delete")
    hold = services.hold_place(actor=op, tenant=tenant_a, data_class=personal, reason="audit")
    sweep = services.sweep_run(now=NIGHT)
    assert [t.tenant.slug for t in purge_tasks()] == ["bravo"]
    [held] = sweep.results["held"]
    assert (held["tenant"], held["store"], held["reasons"]) == ("alpha", "knowledge-sql", ["audit"])
    services.hold_release(actor=op, hold=hold, reason="audit over")
    services.sweep_run(now=NIGHT + timedelta(days=1))
    assert sorted(t.tenant.slug for t in purge_tasks()) == ["alpha", "bravo", "bravo"]


def inbox(tenant, hours_old, n=1):
    with tenant_scope(tenant):
        InboxEntry.objects.bulk_create(
            InboxEntry(
                consumer="c",
                event_id=uuid.uuid4(),
                tenant=tenant,
                handled_at=NIGHT - timedelta(hours=hours_old),
            )
            for _ in range(n)
        )


def dead_letter(tenant, state, resolved_days_ago):
    topic, _ = Topic.objects.get_or_create(name="retention.test", current_schema_version=1)
    subscription, _ = Subscription.objects.get_or_create(
        consumer=Service.objects.get_or_create(name="sink")[0], topic=topic
    )
    resolved = NIGHT - timedelta(days=resolved_days_ago) if resolved_days_ago is not None else None
    with tenant_scope(tenant):
        return DeadLetter.objects.create(
            subscription=subscription,
            event_id=uuid.uuid4(),
            topic=topic.name,
            event_type="X",
            tenant=tenant,
            envelope={},
            error="boom",
            attempts=8,
            state=state,
            created_at=NIGHT - timedelta(days=60),
            resolved_at=resolved,
        )


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


def test_the_sweep_run_twice_the_same_night_issues_and_purges_nothing_more(
    op, bound, personal, tenant_a, settings
):
    services.rule_create(actor=op, name="p", data_class=personal, period_days=90, action="delete")
    window = settings.STEWARD_EVENTING["INBOX_RETENTION_HOURS"]
    inbox(tenant_a, window + 1, n=5)
    first = services.sweep_run(now=NIGHT)
    # rows that expire between the two runs belong to the next night
    inbox(tenant_a, window - 1, n=2)
    second = services.sweep_run(now=NIGHT + timedelta(hours=2))
    assert second.pk == first.pk and second.runs == 2
    assert len(purge_tasks()) == 2
    assert second.results["purge_tasks"]["issued_this_run"] == 0
    assert second.results["purge_tasks"]["already_issued"] == 2
    assert second.results["purge_tasks"]["issued"] == 2
    assert second.results["tables"]["eventing.InboxEntry"]["rows"] == 5  # nothing more
    with tenant_scope(tenant_a):
        assert InboxEntry.objects.count() == 2
    assert RetentionSweep.objects.count() == 1


def test_a_failed_sweep_is_recorded_with_its_error(op, settings):
    settings.STEWARD_RETENTION_DEAD_LETTERS_DAYS = 10**10  # no date is that far back
    with pytest.raises(OverflowError):
        services.sweep_run(now=NIGHT)
    sweep = RetentionSweep.objects.get()
    assert sweep.status == "failed" and "OverflowError" in sweep.error


def test_the_nightly_schedule_is_a_crontab_from_the_setting(settings):
    from django_celery_beat.models import PeriodicTask

    from apps.core.setup import SetupReport, install_schedules

    settings.STEWARD_RETENTION_SWEEP_CRONTAB = "15 3 * * *"
    install_schedules(SetupReport())
    task = PeriodicTask.objects.get(name="governance.periodic_retention_sweep")
    assert (task.crontab.minute, task.crontab.hour, task.queue) == ("15", "3", "periodic")
    settings.STEWARD_RETENTION_SWEEP_CRONTAB = "99 3 * *"
    with pytest.raises(ImproperlyConfigured):
        install_schedules(SetupReport())


def test_the_beat_task_runs_one_sweep(op, bound, personal):
    from apps.governance.tasks import periodic_retention_sweep

    services.rule_create(actor=op, name="p", data_class=personal, period_days=90, action="delete")
    summary = periodic_retention_sweep()
    assert summary["status"] == "succeeded" and summary["purge_tasks_issued"] == 2


def export_artifact(tenant, requester, export_dir, *, expired: bool, name: str):
    from apps.governance.models import ExportArtifact, GovernanceOrder

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
    from apps.governance.models import ExportArtifact

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
