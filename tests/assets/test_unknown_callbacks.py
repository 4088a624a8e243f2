"""Callbacks naming an instance no asset has: recorded, listed for the attention
queue, and resolved by a person, linked to the asset they were meant for or dismissed
with a reason. Each act is audited; a refused one has a stable code and changes
nothing."""

import uuid

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import IntegrityError, transaction

from apps.assets import selectors, services
from apps.assets.models import Asset, WorkflowCallback
from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.models import AuditEvent
from portal.celery import app
from tests.assets.factories import delegated, events, new_asset, reload, requested
from tests.support import wait_for


def unknown_callback(*, approve=True, callback_id="cb-stray"):
    instance = uuid.uuid4()
    receipt = services.callback_receive(
        workflow_instance_id=instance, approve=approve, reason="ok", callback_id=callback_id
    )
    assert not receipt.known
    with system_scope():
        return WorkflowCallback.objects.get(pk=receipt.id)


def waiting_list():
    with system_scope():
        return list(selectors.unknown_instance_callbacks().values_list("pk", flat=True))


def receipt_of(receipt):
    with system_scope():
        return WorkflowCallback.objects.get(pk=receipt.pk)


def audit(action):
    with system_scope():
        return list(AuditEvent.objects.filter(action=action).values_list("object_id", "changes"))


@pytest.mark.django_db(transaction=True)
def test_a_callback_for_a_start_whose_answer_never_came_is_linked_and_applied_by_a_worker(
    tenant_a,
):
    # given a delegated asset whose instance id never reached Steward, and the instance's
    # callback, which therefore names an instance no asset has
    asset = requested(tenant_a, "lost-answer")
    stray = unknown_callback(approve=True)
    assert waiting_list() == [stray.pk]
    [(_, announced)] = events("WorkflowCallbackUnknownInstance")
    assert announced["receipt"] == stray.pk
    # when an operator links it to the asset
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        linked = services.callback_link(receipt=stray, asset=asset, actor=SYSTEM_ACTOR)
        # then the instance is the asset's, and a worker applies the decision
        wait_for(lambda: reload(asset).status == "approved", timeout=30)
    stored = reload(asset)
    assert stored.workflow_instance_id == stray.workflow_instance_id
    assert linked.resolution == "linked" and linked.linked_asset_id == asset.pk
    assert waiting_list() == []
    with tenant_scope(tenant_a):
        [copy] = selectors.callbacks_of(stored)
    assert copy.outcome == "applied" and copy.callback_id == "cb-stray"
    [(object_id, changes)] = audit("callback.linked")
    assert object_id == str(stray.pk) and changes["asset"] == [None, str(asset.pk)]
    [(_, delegation)] = audit("asset.delegate")
    assert delegation["workflow_instance_id"] == [None, str(stray.workflow_instance_id)]


@pytest.mark.django_db
def test_a_callback_linked_to_a_decided_asset_is_history_only(tenant_a):
    asset = services.asset_decide(
        actor=SYSTEM_ACTOR, asset=requested(tenant_a, delegate=False), approve=False
    )
    stray = unknown_callback(approve=True)
    services.callback_link(receipt=stray, asset=asset, actor=SYSTEM_ACTOR)
    assert services.drain_callbacks(tenant_a.pk) == 0
    stored = reload(asset)
    assert stored.status == "rejected" and stored.workflow_instance_id is None
    with tenant_scope(tenant_a):
        assert [c.outcome for c in selectors.callbacks_of(stored)] == ["ignored"]


@pytest.mark.django_db
def test_a_callback_is_dismissed_with_a_reason(tenant_a):
    stray = unknown_callback()
    with pytest.raises(ValidationFailed) as no_reason:
        services.callback_dismiss(receipt=stray, actor=SYSTEM_ACTOR, reason="")
    assert no_reason.value.code == "reason_required" and receipt_of(stray).resolution == ""
    dismissed = services.callback_dismiss(
        receipt=stray, actor=SYSTEM_ACTOR, reason="a test instance of the staging service"
    )
    assert dismissed.resolution == "dismissed" and dismissed.resolved_by == SYSTEM_ACTOR.label
    assert waiting_list() == []
    [(_, changes)] = audit("callback.dismissed")
    assert changes["reason"] == [None, "a test instance of the staging service"]


@pytest.mark.django_db
def test_linking_refuses_what_it_cannot_do_and_changes_nothing(tenant_a, tenant_b):
    stray = unknown_callback()
    waiting_on_another, _ = delegated(tenant_a, "waiting")
    refusals = [
        (new_asset(tenant_a, "draft"), "asset_not_requested"),
        (waiting_on_another, "callback_instance_mismatch"),
    ]
    for asset, code in refusals:
        with pytest.raises(Conflict) as refused:
            services.callback_link(receipt=stray, asset=asset, actor=SYSTEM_ACTOR)
        assert refused.value.code == code
    assert receipt_of(stray).resolution == "" and waiting_list() == [stray.pk]
    assert reload(waiting_on_another).status == "requested"
    with system_scope():
        assert WorkflowCallback.objects.count() == 1
    assert audit("callback.linked") == [] and audit("asset.callback_linked") == []
    # resolved once, a receipt is not resolved again
    services.callback_dismiss(receipt=stray, actor=SYSTEM_ACTOR, reason="noise")
    for act in (
        lambda: services.callback_link(
            receipt=stray, asset=requested(tenant_b, "b"), actor=SYSTEM_ACTOR
        ),
        lambda: services.callback_dismiss(receipt=stray, actor=SYSTEM_ACTOR, reason="again"),
    ):
        with pytest.raises(Conflict) as refused:
            act()
        assert refused.value.code == "callback_already_resolved"
    # and a known instance's receipt needs no one
    _, instance = delegated(tenant_a, "known")
    known = services.callback_receive(
        workflow_instance_id=instance, approve=True, reason="", callback_id="cb-known"
    )
    with tenant_scope(tenant_a):
        receipt = WorkflowCallback.objects.get(pk=known.id)
    with pytest.raises(Conflict) as refused:
        services.callback_dismiss(receipt=receipt, actor=SYSTEM_ACTOR, reason="x")
    assert refused.value.code == "callback_not_unknown"


def unknown_callbacks_for(instance, n=1):
    for i in range(n):
        receipt = services.callback_receive(
            workflow_instance_id=instance, approve=True, reason="ok", callback_id=f"cb-{i}"
        )
        assert not receipt.known
    with system_scope():
        return list(WorkflowCallback.objects.filter(workflow_instance_id=instance).order_by("id"))


@pytest.mark.django_db
def test_an_instance_an_asset_has_is_not_linked_to_another_tenants_asset(tenant_a, tenant_b):
    # given a callback that came before its start's answer was recorded on asset A
    a = requested(tenant_a, "a")
    instance = uuid.uuid4()
    [stray] = unknown_callbacks_for(instance)
    assert services.asset_record_delegation(
        asset=a, approval_request_id=a.approval_request_id, workflow_instance_id=instance
    )
    b = requested(tenant_b, "b")
    # when an operator links it to another tenant's asset waiting on a delegation
    with pytest.raises(Conflict) as refused:
        services.callback_link(receipt=stray, asset=b, actor=SYSTEM_ACTOR)
    # then it is refused, and B is left as it was
    assert refused.value.code == "workflow_instance_linked"
    assert reload(b).workflow_instance_id is None and receipt_of(stray).resolution == ""
    # linked to the asset that has the instance, it decides it
    services.callback_link(receipt=stray, asset=a, actor=SYSTEM_ACTOR)
    services.drain_callbacks(tenant_a.pk)
    assert reload(a).status == "approved"


@pytest.mark.django_db
def test_duplicate_callbacks_for_one_instance_are_one_item_resolved_together(tenant_a):
    instance = uuid.uuid4()
    first, second, third = unknown_callbacks_for(instance, 3)
    other = unknown_callback()
    with system_scope():
        items = list(selectors.unknown_instance_callbacks())
    assert [(r.pk, r.receipts) for r in items] == [(first.pk, 3), (other.pk, 1)]
    asset = requested(tenant_a, "lost-answer")

    services.callback_link(receipt=first, asset=asset, actor=SYSTEM_ACTOR)

    assert waiting_list() == [other.pk]
    assert {receipt_of(r).resolution for r in (first, second, third)} == {"linked"}
    services.drain_callbacks(tenant_a.pk)
    assert reload(asset).status == "approved"
    with tenant_scope(tenant_a):
        copies = sorted(c.outcome for c in selectors.callbacks_of(reload(asset)))
    assert copies == ["applied", "ignored", "ignored"]
    # dismissing resolves every callback of the instance too
    again = uuid.uuid4()
    one, two = unknown_callbacks_for(again, 2)
    services.callback_dismiss(receipt=two, actor=SYSTEM_ACTOR, reason="staging noise")
    assert receipt_of(one).resolution == receipt_of(two).resolution == "dismissed"


@pytest.mark.django_db
def test_two_assets_never_wait_on_one_instance(tenant_a, tenant_b):
    a, instance = delegated(tenant_a, "a")
    b = requested(tenant_b, "b")
    with tenant_scope(tenant_b), pytest.raises(IntegrityError), transaction.atomic():
        Asset.objects.filter(pk=b.pk).update(
            workflow_instance_id=instance, workflow_link_stale=False
        )
    # history may share it: a decided asset keeps its id as the link back
    with tenant_scope(tenant_b):
        Asset.objects.filter(pk=b.pk).update(
            workflow_instance_id=instance, workflow_link_stale=False, status="approved"
        )
    assert reload(b).workflow_instance_id == reload(a).workflow_instance_id == instance


@pytest.mark.django_db
def test_a_callback_goes_to_the_asset_waiting_on_its_instance_not_one_that_had_it(
    tenant_a, tenant_b
):
    # given an instance left, from before Steward refused it, on a decided asset of A's
    # and on an asset of B's that waits on it
    instance = uuid.uuid4()
    decided = services.asset_decide(
        actor=SYSTEM_ACTOR, asset=requested(tenant_a, "decided", delegate=False), approve=True
    )
    with tenant_scope(tenant_a):
        Asset.objects.filter(pk=decided.pk).update(workflow_instance_id=instance)
    waiting = requested(tenant_b, "waiting")
    request = waiting.approval_request_id
    assert services.asset_record_delegation(
        asset=waiting, approval_request_id=request, workflow_instance_id=instance
    )
    # when the Workflow Service decides
    receipt = services.callback_receive(
        workflow_instance_id=instance, approve=False, reason="no", callback_id="cb-1"
    )
    # then the waiting asset's tenant has the receipt, and the decision
    assert receipt.tenant_id == tenant_b.pk
    services.drain_callbacks(tenant_b.pk)
    assert reload(waiting).status == "rejected" and reload(decided).status == "approved"


def test_a_start_answered_with_an_instance_another_asset_waits_on_fails_visibly(tenant_a, tenant_b):
    import uuid as _uuid

    from apps.assets import services as asset_services
    from tests.assets.factories import reload, requested

    instance = _uuid.uuid4()
    first, second = requested(tenant_a, "first"), requested(tenant_b, "second")
    assert asset_services.asset_record_delegation(
        asset=first, approval_request_id=first.approval_request_id, workflow_instance_id=instance
    )
    # the Workflow Service answers the second start with the same instance
    assert not asset_services.asset_record_delegation(
        asset=second, approval_request_id=second.approval_request_id, workflow_instance_id=instance
    )
    second = reload(second)
    assert second.workflow_instance_id is None and second.delegation_failure == "failed"
    assert str(instance) in second.status_reason
    assert reload(first).workflow_instance_id == instance
