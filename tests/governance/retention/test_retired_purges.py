"""A retired binding's data is not forgotten: the minute's round issues its owner one
purge task (the action the retention rule says), the owner's receipt records the data
gone on the binding, and a legal hold pauses the purge until it is released."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from apps.core.errors import Conflict
from apps.core.scope import system_scope
from apps.eventing.models import OutboxEvent
from apps.governance.models import GovernanceTask
from apps.governance.orders import services as orders
from apps.governance.retention import selectors, services
from apps.governance.tasks import periodic_advance_orders
from tests.governance.factories import NIGHT, complete, fresh, live_binding, make_store

pytestmark = pytest.mark.django_db


def retired_purges():
    with system_scope():
        return list(
            GovernanceTask.objects.filter(kind="purge", detail__retired=True).order_by("issued_at")
        )


def test_a_retired_binding_gets_one_purge_task_and_its_receipt_is_recorded(
    op, retention_bindings, telemetry
):
    services.rule_create(
        actor=op, name="telemetry-year", data_class=telemetry, period_days=365, action="archive"
    )
    retired = retention_bindings["retired"]
    done = services.advance_round()
    assert done["retired_purges"] == 1 and done["retired_held"] == 0
    [task] = retired_purges()
    assert task.owner == "metrics" and task.tenant_id == retired.tenant_id
    assert task.store_id == retention_bindings["metrics"].pk
    assert task.detail["binding"] == str(retired.pk) and task.detail["retired"] is True
    assert task.detail["action"] == "archive" and task.detail["rule"] == "telemetry-year"
    assert task.order_id is None and task.status == "issued"
    with system_scope():  # announced to the owner on its task topic
        assert OutboxEvent.objects.filter(
            topic="governance.tasks.metrics", payload__task=str(task.pk)
        ).exists()
    # live bindings get none; a second round issues nothing more
    assert services.advance_round()["retired_purges"] == 0
    assert len(retired_purges()) == 1
    # the owner's receipt: on the task and on the binding
    complete(task, [{"what": "metrics", "action": "archived", "count": 7}])
    assert fresh(task).status == "completed"
    retired = fresh(retired)
    assert retired.data_purged_at is not None
    assert retired.data_purge_receipt["task"] == str(task.pk)
    assert retired.data_purge_receipt["items"][0]["action"] == "archived"
    # its data gone, the binding is owed nothing more
    assert services.advance_round()["retired_purges"] == 0
    # the beat task runs the same round
    assert periodic_advance_orders()["retired_purges"] == 0


def test_without_a_rule_a_retired_bindings_data_is_deleted(retention_bindings):
    services.retired_binding_purges_now()
    [task] = retired_purges()
    assert task.detail["action"] == "delete" and task.detail["rule"] is None


def test_a_legal_hold_pauses_a_retired_stores_purge_until_it_is_released(
    op, retention_bindings, tenant_b
):
    metrics = retention_bindings["metrics"]
    hold = services.hold_place(actor=op, tenant=tenant_b, store=metrics, reason="litigation #7")
    done = services.retired_binding_purges_now()
    assert done["issued"] == []
    [held] = done["held"]
    assert held["binding"] == str(retention_bindings["retired"].pk)
    assert held["holds"] == [str(hold.pk)] and held["reasons"] == ["litigation #7"]
    assert services.advance_round()["retired_held"] == 1
    assert retired_purges() == []
    # released, the next round issues the purge
    services.hold_release(actor=op, hold=hold, reason="case closed")
    assert services.advance_round()["retired_purges"] == 1
    [task] = retired_purges()
    assert task.owner == "metrics"


def test_a_tenant_wide_hold_pauses_it_too(op, retention_bindings, tenant_b):
    services.hold_place(actor=op, tenant=tenant_b, reason="regulator inquiry")
    assert services.retired_binding_purges_now()["issued"] == []
    assert orders.advance_orders()  # the orders' round alone issues nothing either
    assert retired_purges() == []


def owner_events(event_type, task):
    with system_scope():
        return list(
            OutboxEvent.objects.filter(
                topic="governance.tasks.metrics", event_type=event_type, payload__task=str(task.pk)
            )
        )


def test_a_hold_placed_after_the_purge_was_issued_pauses_it_until_released(
    op, retention_bindings, tenant_b, telemetry, store, client
):
    services.retired_binding_purges_now()
    [task] = retired_purges()
    other = services.hold_place(actor=op, tenant=tenant_b, store=store, reason="another store")
    assert fresh(task).held_at is None  # a hold on another store leaves it going
    hold = services.hold_place(
        actor=op, tenant=tenant_b, data_class=telemetry, reason="litigation #9"
    )
    task = fresh(task)
    assert task.is_held and task.status == "issued"
    [paused] = owner_events("GovernanceTaskPaused", task)
    assert paused.payload["hold"] == str(hold.pk)
    # the hold's page lists what it pauses; the hold on another store pauses nothing
    assert [t.pk for t in selectors.purges_paused_by(hold)] == [task.pk]
    assert selectors.purges_paused_by(other) == []
    client.force_login(op.user)
    page = client.get(hold.get_absolute_url()).content.decode()
    assert "Purges it pauses" in page and "metrics" in page
    # the owner's receipt is refused while the hold stands, and changes nothing
    with pytest.raises(Conflict) as refused:
        complete(task)
    assert refused.value.code == "task_held"
    assert fresh(task).status == "issued"
    assert fresh(retention_bindings["retired"]).data_purged_at is None
    # not overdue while held, however long the hold lasts
    with system_scope():
        GovernanceTask.objects.filter(pk=task.pk).update(due_at=NIGHT - timedelta(days=30))
    assert orders.flag_overdue_owner_tasks() == 0
    # another hold released: this one still stands, the task stays paused
    services.hold_release(actor=op, hold=other, reason="done with that store")
    assert fresh(task).is_held
    services.hold_release(actor=op, hold=hold, reason="case closed")
    task = fresh(task)
    assert task.held_at is None and task.due_at > timezone.now()
    assert len(owner_events("GovernanceTaskResumed", task)) == 1
    complete(task)
    assert fresh(task).status == "completed"
    assert fresh(retention_bindings["retired"]).data_purged_at is not None


def test_a_hold_pauses_a_nights_purge_of_a_live_binding_too(
    op, retention_bindings, personal, tenant_a
):
    services.rule_create(actor=op, name="p", data_class=personal, period_days=90, action="delete")
    services.sweep_run(now=NIGHT)
    with system_scope():
        [task] = GovernanceTask.objects.filter(
            kind="purge", tenant=tenant_a, detail__night=NIGHT.date().isoformat()
        )
    services.hold_place(actor=op, tenant=tenant_a, reason="whole tenant")
    assert fresh(task).is_held


def test_the_preview_lists_retired_bindings_owed_a_purge_with_their_task(
    op, retention_bindings, tenant_b, telemetry
):
    retired = retention_bindings["retired"]
    [row] = selectors.sweep_preview(now=NIGHT)["retired"]
    assert (row["binding"], row["owner"], row["task_status"]) == (
        str(retired.pk),
        "metrics",
        "to issue",
    )
    services.retired_binding_purges_now()
    [task] = retired_purges()
    [row] = selectors.sweep_preview(now=NIGHT)["retired"]
    assert (row["task"], row["task_status"], row["action"]) == (str(task.pk), "issued", "delete")
    hold = services.hold_place(actor=op, tenant=tenant_b, data_class=telemetry, reason="hold")
    [row] = selectors.sweep_preview(now=NIGHT)["retired"]
    assert row["task_status"] == "held" and row["holds"][0]["id"] == str(hold.pk)


def test_the_preview_costs_the_same_statements_however_many_bindings_are_retired(
    retention_bindings, tenant_b, profile, telemetry
):
    def preview_statements() -> int:
        with CaptureQueriesContext(connection) as ctx:
            rows = selectors.sweep_preview(now=NIGHT)["retired"]
        assert all(row["task_status"] in ("issued", "to issue") for row in rows)
        return len(ctx.captured_queries)

    before = preview_statements()  # one binding, its task not yet issued
    for n in range(3):
        live_binding(
            tenant_b, make_store(f"old-{n}", telemetry, owner="metrics"), profile, status="retired"
        )
    services.retired_binding_purges_now()  # three more tasks
    live_binding(
        tenant_b, make_store("old-3", telemetry, owner="metrics"), profile, status="retired"
    )
    rows = selectors.sweep_preview(now=NIGHT)["retired"]
    assert sorted(row["task_status"] for row in rows) == ["issued"] * 4 + ["to issue"]
    assert preview_statements() == before
