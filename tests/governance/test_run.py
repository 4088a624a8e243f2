"""A tenant deletion's run: strict phases, overdue alerts, audit redaction, completion."""

from datetime import timedelta

import pytest
from django.core import mail
from django.db import DatabaseError, connection
from django.utils import timezone

from apps.assets.models import Asset
from apps.core.context import Actor
from apps.core.errors import InvalidTransition
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import OutboxEvent
from apps.governance import evidence, services
from apps.governance.models import EvidenceEntry, GovernanceOrder, GovernanceTask
from apps.tenancy.models import AuditEvent, Tenant
from tests.governance.conftest import approved, complete, fresh, open_tasks, owner

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _no_cooling_off(settings):
    settings.STEWARD_DELETION_GRACE_HOURS = 0


def events(event_type):
    with system_scope():
        return list(OutboxEvent.objects.filter(event_type=event_type).order_by("id"))


def test_phases_run_in_order_whatever_order_their_tasks_complete_in(bound, tenant_a):
    order = approved(tenant_a)
    assert order.status == "running" and order.phase == 1
    fresh(tenant_a)
    assert tenant_a.status == Tenant.Status.OFFBOARDING
    first = open_tasks(order, 1)
    assert [(t.owner, t.kind) for t in first] == [("search", "delete"), ("steward", "delete")]
    # each owner hears of its task on its own topic
    issued = events("GovernanceTaskIssued")
    assert {(e.topic, e.payload["task"]) for e in issued} == {
        ("governance.tasks.search", str(first[0].pk)),
        ("governance.tasks.steward", str(first[1].pk)),
    }
    # Steward finishes before the search service: phase 2 still waits
    complete(first[1])
    fresh(order)
    assert order.phase == 1 and open_tasks(order, 2) == []
    complete(first[0])
    fresh(order)
    assert order.phase == 2
    second = open_tasks(order, 2)
    assert [t.owner for t in second] == ["orders", "steward"]
    # a phase-1 receipt sent again is the same answer: nothing moves
    complete(first[0])
    for task in reversed(second):
        complete(task)
    fresh(order)
    assert order.phase == 3
    assert [(t.owner, t.kind) for t in open_tasks(order, 3)] == [
        ("audit-log", "redact"),
        ("steward", "redact"),
    ]
    for task in open_tasks(order, 3):
        complete(task)
    fresh(order)
    assert order.phase == 4
    closing, releasing = open_tasks(order, 4)
    assert (closing.owner, closing.kind) == ("commercial", "close_subscription")
    assert (releasing.owner, releasing.kind) == ("steward", "delete")
    complete(closing, [{"what": "subscription", "action": "closed", "count": 1}])
    fresh(order)
    assert order.status == "running"
    complete(releasing)
    fresh(order)
    assert order.status == "completed"
    # the evidence lists every phase in order, and each started after the previous ended
    with tenant_scope(tenant_a):
        kinds = [
            (e.kind, e.data.get("phase"))
            for e in EvidenceEntry.objects.filter(order=order).order_by("sequence")
            if e.kind in ("phase_started", "phase_completed")
        ]
    assert kinds == [
        ("phase_started", 1),
        ("phase_completed", 1),
        ("phase_started", 2),
        ("phase_completed", 2),
        ("phase_started", 3),
        ("phase_completed", 3),
        ("phase_started", 4),
        ("phase_completed", 4),
    ]


def test_completion_announces_the_evidence_digest_anyone_can_verify(bound, tenant_a):
    with tenant_scope(tenant_a):
        Asset.objects.create(tenant=tenant_a, name="model-weights")
    order = approved(tenant_a)
    for number in (1, 2, 3, 4):
        for task in open_tasks(order, number):
            complete(task)
    fresh(order)
    [done] = events("DeletionOrderCompleted")
    with tenant_scope(tenant_a):
        document = evidence.document(order)
        assert not Asset.objects.filter(tenant=tenant_a).exists()
    assert done.payload["evidence_final_digest"] == order.final_digest == document["final_digest"]
    assert evidence.verify(document) == (True, None)
    fresh(tenant_a)
    assert tenant_a.status == Tenant.Status.DELETED
    # Steward's receipts say what it deleted
    with system_scope():
        steward = GovernanceTask.objects.get(order=order, phase=2, owner="steward")
    assert {"what": "assets.Asset", "action": "deleted", "count": 1} in steward.receipt["items"]
    assert len(steward.receipt["digest"]) == 64


def test_an_overdue_task_alerts_once_and_the_order_keeps_waiting(
    bound, tenant_a, django_capture_on_commit_callbacks
):
    order = approved(tenant_a)
    search, steward = open_tasks(order, 1)
    complete(steward)
    with tenant_scope(tenant_a):
        GovernanceTask.objects.filter(pk=search.pk).update(
            due_at=timezone.now() - timedelta(minutes=1)
        )
    with django_capture_on_commit_callbacks(execute=True):
        assert services.flag_overdue() == 1
    assert services.flag_overdue() == 0  # alerted once
    fresh(order)
    assert order.status == "overdue" and order.phase == 1
    [alert] = events("GovernanceTaskOverdue")
    assert alert.payload["task"] == str(search.pk) and alert.topic == "governance.order"
    assert [m.to for m in mail.outbox] == [["req@example.com"]]
    assert "overdue" in mail.outbox[0].subject
    with tenant_scope(tenant_a):
        assert EvidenceEntry.objects.filter(order=order, kind="task_overdue").count() == 1
    # no phase is skipped: the next begins only once the late task completes
    assert open_tasks(order, 2) == []
    complete(search)
    fresh(order)
    assert order.status == "running" and order.phase == 2


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


def test_a_started_order_cannot_be_cancelled(bound, tenant_a):
    order = approved(tenant_a)
    requester = Actor(user=order.requested_by)
    with pytest.raises(InvalidTransition):
        services.order_cancel(actor=requester, order=order)


def test_a_deletion_waits_out_its_cooling_off_period_and_can_be_cancelled_meanwhile(
    bound, tenant_a, settings
):
    settings.STEWARD_DELETION_GRACE_HOURS = 24
    order = approved(tenant_a)
    assert order.status == "approved" and open_tasks(order) == []
    assert services.start_due_orders() == 0
    with tenant_scope(tenant_a):
        GovernanceOrder.objects.filter(pk=order.pk).update(
            decided_at=timezone.now() - timedelta(hours=25)
        )
    assert services.start_due_orders() == 1
    fresh(order)
    assert order.status == "running" and len(open_tasks(order, 1)) == 2


def test_a_failed_task_is_retried_by_an_operator_and_each_retry_is_evidence(
    bound, tenant_a, operator
):
    order = approved(tenant_a)
    search = open_tasks(order, 1)[0]
    services.task_fail(actor=owner("search"), task_id=search.pk, reason="index locked")
    with pytest.raises(services.NotAllowed):
        services.task_retry(actor=owner("search"), task_id=search.pk)
    retried = services.task_retry(actor=Actor(user=operator), task_id=search.pk)
    assert (retried.status, retried.attempt) == ("issued", 2)
    with tenant_scope(tenant_a):
        kinds = list(EvidenceEntry.objects.filter(order=order).values_list("kind", flat=True))
    assert "task_failed" in kinds and "task_retried" in kinds
    assert (
        len([e for e in events("GovernanceTaskIssued") if e.payload["task"] == str(search.pk)]) == 2
    )


def test_only_the_owner_or_an_operator_speaks_for_a_task(bound, tenant_a):
    order = approved(tenant_a)
    search = open_tasks(order, 1)[0]
    with pytest.raises(services.NotAllowed):
        services.task_complete(actor=owner("orders"), task_id=search.pk, receipt={"items": []})
    fresh(search)
    assert search.status == "issued"


@pytest.mark.django_db(transaction=True)
def test_a_real_worker_does_stewards_own_tasks_phase_after_phase(tenant_a):
    """No store bound: each phase waits only on Steward, whose worker deletes, redacts
    and releases, until the commercial service alone is left to close the subscription."""
    from celery.contrib.testing.worker import start_worker

    from portal.celery import app
    from tests.support import wait_for

    with tenant_scope(tenant_a):
        Asset.objects.create(tenant=tenant_a, name="weights")
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        order = approved(tenant_a)
        wait_for(
            lambda: (
                [t.status for t in open_tasks(order, 4) if t.owner == "steward"] == ["completed"]
            ),
            timeout=60,
        )
    steward = [t for t in open_tasks(order) if t.owner == "steward"]
    assert [(t.phase, t.status) for t in sorted(steward, key=lambda t: t.phase)] == [
        (1, "completed"),
        (2, "completed"),
        (3, "completed"),
        (4, "completed"),
    ]
    [closing] = [t for t in open_tasks(order, 4) if t.owner == "commercial"]
    assert closing.status == "issued"
    with system_scope():
        assert not Asset.objects.filter(tenant=tenant_a).exists()


def test_a_legal_hold_keeps_a_deletion_from_starting_and_from_its_next_phase(
    bound, tenant_a, operator
):
    from apps.governance import retention_services

    hold = retention_services.hold_place(
        actor=Actor(user=operator), tenant=tenant_a, reason="litigation 2026-17"
    )
    order = approved(tenant_a)
    assert order.status == "approved" and open_tasks(order) == []
    assert services.start_due_orders() == 1  # tried: still held
    fresh(order)
    assert order.status == "approved"
    with tenant_scope(tenant_a):
        kinds = list(order.evidence.values_list("kind", flat=True))
    assert kinds.count("waiting_for_legal_hold") == 1  # said once, not every minute
    retention_services.hold_release(actor=Actor(user=operator), hold=hold, reason="settled")
    services.start_due_orders()
    fresh(order)
    assert order.status == "running" and order.phase == 1
    # a hold placed during a phase lets it finish, and keeps the next from starting
    second = retention_services.hold_place(
        actor=Actor(user=operator), tenant=tenant_a, reason="regulator's request"
    )
    for task in open_tasks(order, 1):
        complete(task)
    fresh(order)
    assert order.phase == 1 and open_tasks(order, 2) == []
    assert services.resume_held_orders() == 0
    retention_services.hold_release(actor=Actor(user=operator), hold=second, reason="closed")
    assert services.resume_held_orders() == 1
    fresh(order)
    assert order.phase == 2 and len(open_tasks(order, 2)) == 2


def test_the_database_refuses_a_second_purge_task_of_the_same_key(tenant_a):
    from django.db import IntegrityError

    due = timezone.now() + timedelta(days=1)
    with tenant_scope(tenant_a):
        services.task_issue(
            tenant_id=tenant_a.pk, owner="search", kind="purge", detail={"key": "k1"}, due_at=due
        )
        with pytest.raises(IntegrityError):
            services.task_issue(
                tenant_id=tenant_a.pk,
                owner="search",
                kind="purge",
                detail={"key": "k1"},
                due_at=due,
            )


def test_stewards_own_consumers_follow_a_new_owner_topic_at_once(
    bound, tenant_a, django_capture_on_commit_callbacks
):
    """Found by the chaos drill: an owner's task topic made with the order's first task
    got Steward's consumer group only at the consumers' next refresh, at the end of the
    stream, after that task's GovernanceTaskIssued had been dispatched: never handled."""
    from apps.core.redis import get_redis
    from apps.eventing.transports import stream_key

    stream = stream_key(services.task_topic("search"))
    get_redis().delete(stream)
    with django_capture_on_commit_callbacks(execute=True):
        approved(tenant_a)
    groups = [g["name"] for g in get_redis().xinfo_groups(stream)]
    assert b"steward.recent-events" in groups


@pytest.mark.django_db(transaction=True)
def test_stewards_own_work_whose_message_was_lost_is_sent_again(tenant_a, settings):
    """Redis went away as the task was sent (or a worker died holding it): the minute's
    round sends Steward's open task again, and a real worker does it."""
    from celery.contrib.testing.worker import start_worker

    from apps.governance import work
    from portal.celery import app
    from tests.support import wait_for

    order = approved(tenant_a)
    [task] = [t for t in open_tasks(order, 1) if t.owner == "steward"]
    app.control.purge()  # the message is lost
    settings.STEWARD_STALLED_WORK_SECONDS = 0
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        assert work.advance_orders()["redriven"] == 1
        wait_for(lambda: fresh(task).status == "completed", timeout=30)


def test_a_task_another_run_has_claimed_is_left_to_it(tenant_a):
    import psycopg

    from apps.governance import work
    from tests.support import database_url

    order = approved(tenant_a)
    [task] = [t for t in open_tasks(order, 1) if t.owner == "steward"]
    key = f"governance.task:{task.pk}"
    with psycopg.connect(database_url(), autocommit=True) as other:  # the other run
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [key])
        assert work.run_steward_task(task_id=task.pk) == "running elsewhere"
        assert fresh(task).status == "issued"
    # the other run's worker died: its connection, and the claim, went with it
    assert work.run_steward_task(task_id=task.pk) == "completed"
    assert work.run_steward_task(task_id=task.pk) == "nothing to do"


@pytest.mark.django_db(transaction=True)
def test_an_export_nobody_assembled_is_assembled_by_the_round(tenant_a, settings):
    from celery.contrib.testing.worker import start_worker

    from apps.governance import work
    from apps.governance.models import ExportArtifact
    from portal.celery import app
    from tests.support import wait_for

    order = approved(tenant_a, kind="export")
    for task in open_tasks(order):  # Steward's own, done here, and nobody else's
        complete(task)
    app.control.purge()  # the assembly's message is lost
    assert fresh(order).status == "running"
    settings.STEWARD_STALLED_WORK_SECONDS = 0
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        assert work.advance_orders()["redriven"] == 1
        wait_for(lambda: fresh(order).status == "completed", timeout=30)
    with system_scope():
        assert ExportArtifact.objects.filter(order=order).count() == 1
    # once built, nothing is sent again
    assert work.advance_orders()["redriven"] == 0
