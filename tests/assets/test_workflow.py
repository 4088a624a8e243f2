"""The Workflow Service client (apps/assets/workflow.py) as delegation and the
reconciler use it, against a real (local) Workflow Service over HTTP."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.assets import (
    services,
    tasks,  # noqa: F401 - registers the tasks, which the sweep sends eagerly
)
from apps.assets.models import Asset
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import UncertainEffect
from apps.tenancy.models import AuditEvent
from portal.celery import app
from tests.assets.factories import reload, requested
from tests.support import LocalServer

pytestmark = pytest.mark.django_db


def test_delegation_starts_one_instance_and_stores_its_id(tenant_a, workflow_service):
    server, service = workflow_service
    asset = requested(tenant_a)
    assert services.asset_delegate(asset_id=asset.pk) == "succeeded"
    stored = reload(asset)
    assert str(stored.workflow_instance_id) == service.instances[str(asset.approval_request_id)]
    assert stored.is_workflow_managed
    assert services.asset_delegate(asset_id=asset.pk) == "nothing to do"
    assert len([r for r in server.received if r.method == "POST"]) == 1


def test_the_reconciler_applies_final_decisions_and_flags_unknown_instances(tenant_a, settings):
    decided_there, still_running, forgotten = (uuid.uuid4() for _ in range(3))
    states = {
        str(decided_there): {"state": "completed", "decision": "reject", "reason": "no"},
        str(still_running): {"state": "running", "decision": None},
    }

    def respond(received):
        instance = received.path.rsplit("/", 1)[-1]
        return (200, states[instance]) if instance in states else (404, {})

    assets = {}
    for instance in (decided_there, still_running, forgotten):
        asset = requested(tenant_a)
        services.asset_record_delegation(
            asset=asset,
            approval_request_id=asset.approval_request_id,
            workflow_instance_id=instance,
        )
        assets[instance] = asset
    with tenant_scope(tenant_a):
        Asset.objects.update(updated_at=timezone.now() - timedelta(hours=2))
    with LocalServer(respond=respond) as server:
        settings.STEWARD_WORKFLOW_SERVICE_URL = server.url
        counts = services.reconcile_stale_delegations()
    assert counts == {"applied": 1, "running": 1, "unknown": 1, "unreachable": 0}
    assert reload(assets[decided_there]).status == "rejected"
    assert reload(assets[still_running]).status == "requested"
    assert reload(assets[forgotten]).status == "requested"
    with system_scope():
        flagged = AuditEvent.objects.filter(action="asset.workflow_unknown").get()
    assert flagged.object_id == str(assets[forgotten].pk)


def test_the_sweep_delegates_again_what_a_dead_worker_never_started(tenant_a, workflow_service):
    """Found by the chaos drill: a delegation held by a SIGKILLed worker waited for the
    broker's visibility timeout (twenty minutes) before anyone asked the Workflow Service."""
    server, service = workflow_service
    lost = requested(tenant_a)  # its on-commit task never runs here: as if lost
    by_person = services.asset_request_approval(
        actor=SYSTEM_ACTOR,
        asset=services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="manual"),
        delegate=False,
    )
    fresh = requested(tenant_a)
    with tenant_scope(tenant_a):
        Asset.objects.exclude(pk=fresh.pk).update(updated_at=timezone.now() - timedelta(minutes=2))
    app.conf.task_always_eager = True  # the sweep's task runs here, against the stand-in
    try:
        assert services.resume_lost_delegations() == 1
        assert reload(lost).is_workflow_managed
        assert not reload(by_person).is_workflow_managed  # a person decides that one
        assert not reload(fresh).is_workflow_managed  # its task may still be on its way
        with tenant_scope(tenant_a):
            Asset.objects.update(updated_at=timezone.now() - timedelta(minutes=2))
        assert services.resume_lost_delegations() == 1  # only `fresh` now
    finally:
        app.conf.task_always_eager = False
    assert len(service.instances) == 2


def test_the_sweep_records_a_start_its_worker_settled_but_never_stored(tenant_a, settings):
    """Found by the chaos drill: the start was answered and its effect settled, then the
    worker died before storing the instance on the asset; the Workflow Service's
    callbacks for that instance were refused as unknown until the drill gave up."""
    settings.STEWARD_WORKFLOW_SERVICE_URL = "http://127.0.0.1:9"  # nobody is asked again
    asset, refused = requested(tenant_a), requested(tenant_a)
    instance = uuid.uuid4()
    with tenant_scope(tenant_a):
        for of, state, result, error in (
            (asset, UncertainEffect.State.SUCCEEDED, {"instance_id": str(instance)}, ""),
            (refused, UncertainEffect.State.FAILED, {}, "WorkflowServiceRefused: 422"),
        ):
            UncertainEffect.objects.create(
                tenant=tenant_a,
                actor="assets",
                target_system="workflow-service",
                operation="start-approval",
                external_ref=str(of.approval_request_id),
                state=state,
                result=result,
                last_error=error,
            )
        Asset.objects.update(updated_at=timezone.now() - timedelta(minutes=2))
    assert services.resume_lost_delegations() == 0  # nothing to start again
    stored = reload(asset)
    assert stored.workflow_instance_id == instance and not stored.workflow_link_stale
    assert stored.is_workflow_managed
    assert reload(refused).delegation_failure == Asset.DelegationFailure.REFUSED
    # a second sweep finds nothing more to record
    with tenant_scope(tenant_a):
        Asset.objects.update(updated_at=timezone.now() - timedelta(minutes=2))
    assert services.resume_lost_delegations() == 0
    assert reload(asset).workflow_instance_id == instance


def test_the_sweep_leaves_a_start_in_doubt_to_the_reconciler(tenant_a, settings):
    settings.STEWARD_WORKFLOW_SERVICE_URL = "http://127.0.0.1:9"  # nobody is asked
    asset = requested(tenant_a)
    with tenant_scope(tenant_a):
        UncertainEffect.objects.create(
            tenant=tenant_a,
            actor="assets",
            target_system="workflow-service",
            operation="start-approval",
            external_ref=str(asset.approval_request_id),
            state=UncertainEffect.State.UNCERTAIN,
        )
        Asset.objects.update(updated_at=timezone.now() - timedelta(minutes=2))
    assert services.resume_lost_delegations() == 0
