"""The start reconciler (apps/assets/effects.py): a start whose answer never came is
settled by asking the Workflow Service for the instance by its key."""

import pytest

from apps.assets import services
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.effects import reconcile_due
from apps.eventing.models import UncertainEffect
from tests.assets.factories import reload, requested

pytestmark = pytest.mark.django_db


def test_a_start_that_times_out_is_uncertain_then_reconciled_by_key(
    tenant_a, workflow_service, settings
):
    server, service = workflow_service
    settings.STEWARD_WORKFLOW_TIMEOUT_SECONDS = 0.2
    server.delay = 0.5  # it starts the instance, but answers too late
    asset = requested(tenant_a)
    assert services.asset_delegate(asset_id=asset.pk) == "uncertain"
    assert reload(asset).workflow_instance_id is None
    server.delay = 0
    with tenant_scope(tenant_a):
        UncertainEffect.objects.update(next_check_at=asset.created_at)
    assert reconcile_due() == 1
    stored = reload(asset)
    assert str(stored.workflow_instance_id) == service.instances[str(asset.approval_request_id)]
    assert len(service.instances) == 1  # never two instances for one request
    with system_scope():
        assert UncertainEffect.objects.get().state == "succeeded"
