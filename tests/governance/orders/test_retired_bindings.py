"""Deletion reaches every store that ever held the tenant's data: a retired binding's
owner is asked like a live one's, the order page and the evidence say the binding is
retired, and the owner's receipt is recorded on the task and on the binding."""

import pytest
from django.test import Client

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from apps.governance.models import EvidenceEntry
from apps.governance.retention import services as retention
from apps.stores import services as stores
from apps.stores.models import StoreBinding
from tests.factories import member
from tests.governance.factories import approved, complete, fresh, open_tasks

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_cooling_off")]


def retire(binding):
    """Retire a binding as stores does: Retiring, then its credentials revoked."""
    stores.binding_retire(actor=SYSTEM_ACTOR, binding=binding, reason="moved elsewhere")
    assert stores.binding_revoke(binding_id=binding.pk) == "retired"
    return fresh(binding)


def binding_of(tenant, store):
    with tenant_scope(tenant):
        return StoreBinding.objects.get(tenant=tenant, store=store)


def test_a_deletion_asks_a_retired_stores_owner_and_records_its_receipt(bound, tenant_a):
    orders_binding = retire(binding_of(tenant_a, bound["orders"]))
    assert orders_binding.status == "retired" and orders_binding.data_purged_at is None

    order = approved(tenant_a)
    for task in open_tasks(order, 1):
        complete(task)
    fresh(order)
    assert order.phase == 2
    second = open_tasks(order, 2)
    asked = [t for t in second if t.owner == "orders"]
    assert len(asked) == 1  # the retired store's owner is asked all the same
    task = asked[0]
    assert task.kind == "delete" and task.store_id == bound["orders"].pk
    assert task.detail["binding"] == str(orders_binding.pk)
    assert task.detail["retired"] is True and task.detail["binding_status"] == "retired"

    # the evidence names the task as a retired binding's
    with tenant_scope(tenant_a):
        issued = EvidenceEntry.objects.get(order=order, kind="task_issued", data__task=str(task.pk))
    assert issued.data["retired"] is True
    assert issued.data["binding"] == str(orders_binding.pk)

    # the order page lists it, marked retired
    operator_page = Client()
    operator_page.force_login(member(tenant_a, role="admin", username="reader"))
    page = operator_page.get(order.get_absolute_url()).content.decode()
    assert "orders-sql" in page and "retired binding" in page

    # the owner's receipt: recorded on the task and on the binding
    receipt_items = [{"what": "orders", "action": "deleted", "count": 42}]
    complete(task, receipt_items)
    task = fresh(task)
    assert task.status == "completed" and task.receipt["items"] == receipt_items
    orders_binding = fresh(orders_binding)
    assert orders_binding.data_purged_at is not None
    assert orders_binding.data_purge_receipt["task"] == str(task.pk)
    assert orders_binding.data_purge_receipt["order"] == str(order.pk)
    assert orders_binding.data_purge_receipt["items"] == receipt_items
    purged_at = orders_binding.data_purged_at
    complete(task, receipt_items)  # the same receipt again changes nothing
    assert fresh(orders_binding).data_purged_at == purged_at

    # the order runs to its end; live bindings' receipts are not recorded as retired ones
    for number in (2, 3, 4):
        for t in open_tasks(order, number):
            if t.status == "issued":
                complete(t, [{"what": "x", "action": "deleted", "count": 1}])
    assert fresh(order).status == "completed"
    # phase 4 released the bindings (their rows go, the order's tasks and evidence stay
    # as the record); none is owed a purge task
    with system_scope():
        assert not StoreBinding.objects.filter(tenant=tenant_a).exists()
    assert retention.retired_binding_purges_now()["issued"] == []


def test_a_retired_binding_whose_data_is_gone_is_not_asked_again(bound, tenant_a):
    binding = retire(binding_of(tenant_a, bound["orders"]))
    stores.binding_record_data_purged(
        actor=SYSTEM_ACTOR, binding=binding, receipt={"items": [], "digest": "cd" * 32}
    )
    order = approved(tenant_a)
    for task in open_tasks(order, 1):
        complete(task)
    assert [t.owner for t in open_tasks(order, 2)] == ["steward"]
