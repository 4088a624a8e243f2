"""The assets app's Celery tasks: thin, each calling one service."""

import pytest
from django.db import OperationalError

from apps.assets import services
from apps.assets.tasks import (
    apply_workflow_callbacks,
    delegate_approval,
    periodic_apply_workflow_callbacks,
)
from tests.assets.factories import delegated, outcomes, reload, requested, status_of

pytestmark = pytest.mark.django_db


def test_a_delegation_that_lost_the_database_goes_again(tenant_a, workflow_service, monkeypatch):
    """Found by the chaos drill: a delegation whose worker lost PostgreSQL mid-task was
    gone for good, because no sweep starts delegations again."""
    asset = requested(tenant_a)
    real, attempts = services.asset_delegate, []

    def flaky(*, asset_id):
        attempts.append(asset_id)
        if len(attempts) == 1:
            raise OperationalError("server closed the connection unexpectedly")
        return real(asset_id=asset_id)

    monkeypatch.setattr(services, "asset_delegate", flaky)
    assert delegate_approval.apply(kwargs={"asset_id": str(asset.pk)}).get() == "succeeded"
    assert len(attempts) == 2
    assert reload(asset).is_workflow_managed


def test_a_kicked_run_applies_its_tenants_pending_callbacks(tenant_a):
    asset, instance = delegated(tenant_a)
    services.callback_receive(
        workflow_instance_id=instance, approve=True, reason="", callback_id="cb"
    )
    assert apply_workflow_callbacks.apply(kwargs={"tenant_id": str(tenant_a.pk)}).get() == 1
    assert outcomes() == ["applied"] and status_of(asset) == "approved"


def test_the_sweep_applies_every_tenants_pending_callbacks(tenant_a, tenant_b):
    waiting = [delegated(tenant) for tenant in (tenant_a, tenant_b)]
    for _, instance in waiting:
        services.callback_receive(
            workflow_instance_id=instance, approve=False, reason="", callback_id="cb"
        )
    assert periodic_apply_workflow_callbacks.apply().get() == 2
    assert [status_of(asset) for asset, _ in waiting] == ["rejected", "rejected"]
