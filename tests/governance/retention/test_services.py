"""Retention rules, legal holds and the nightly sweep, through their services, against
the real database."""

from datetime import timedelta

import pytest
from django.db import DatabaseError, connection, transaction

from apps.core.context import Actor
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import InboxEntry, OutboxEvent
from apps.governance.models import GovernanceTask, LegalHold, RetentionRule, RetentionSweep
from apps.governance.permissions import NotAllowed
from apps.governance.retention import services
from apps.governance.retention.policy import RuleLocked
from apps.tenancy.models import AuditEvent
from tests.factories import member
from tests.governance.factories import NIGHT, inbox

pytestmark = pytest.mark.django_db


def audit_actions(prefix):
    with system_scope():
        return list(
            AuditEvent.objects.filter(action__startswith=prefix)
            .order_by("id")
            .values_list("action", flat=True)
        )


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


def purge_tasks():
    with system_scope():
        return list(
            GovernanceTask.objects.filter(kind="purge")
            .select_related("tenant", "store")
            .order_by("tenant__slug", "store__slug")
        )


def test_the_sweep_issues_purge_tasks_to_owning_services_with_due_dates(
    op, retention_bindings, personal, telemetry, store, settings
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


def test_a_hold_stops_the_purge_until_it_is_released(
    op, retention_bindings, personal, tenant_a, store
):
    services.rule_create(actor=op, name="p", data_class=personal, period_days=90, action="delete")
    hold = services.hold_place(actor=op, tenant=tenant_a, data_class=personal, reason="audit")
    sweep = services.sweep_run(now=NIGHT)
    assert [t.tenant.slug for t in purge_tasks()] == ["bravo"]
    [held] = sweep.results["held"]
    assert (held["tenant"], held["store"], held["reasons"]) == ("alpha", "knowledge-sql", ["audit"])
    services.hold_release(actor=op, hold=hold, reason="audit over")
    services.sweep_run(now=NIGHT + timedelta(days=1))
    assert sorted(t.tenant.slug for t in purge_tasks()) == ["alpha", "bravo", "bravo"]


def test_the_sweep_run_twice_the_same_night_issues_and_purges_nothing_more(
    op, retention_bindings, personal, tenant_a, own_rules
):
    services.rule_create(actor=op, name="p", data_class=personal, period_days=90, action="delete")
    window = own_rules["steward-event-receipts"].period_days * 24
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


def test_a_failed_sweep_is_recorded_with_its_error(op, own_rules):
    # no date is that far back
    RetentionRule.objects.filter(name="steward-dead-letters").update(period_days=10**9)
    with pytest.raises(OverflowError):
        services.sweep_run(now=NIGHT)
    sweep = RetentionSweep.objects.get()
    assert sweep.status == "failed" and "OverflowError" in sweep.error
