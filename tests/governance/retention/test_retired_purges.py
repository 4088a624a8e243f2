"""A retired binding's data is not forgotten: the minute's round issues its owner one
purge task (the action the retention rule says), the owner's receipt records the data
gone on the binding, and a legal hold pauses the purge until it is released."""

import pytest

from apps.core.scope import system_scope
from apps.eventing.models import OutboxEvent
from apps.governance.models import GovernanceTask
from apps.governance.orders import services as orders
from apps.governance.retention import services
from apps.governance.tasks import periodic_advance_orders
from tests.governance.factories import complete, fresh

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
