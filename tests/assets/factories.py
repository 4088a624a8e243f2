"""Assets in the states the tests start from, and what the tests read back."""

import uuid

from apps.assets import services
from apps.assets.models import Asset, WorkflowCallback
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import OutboxEvent


def new_asset(tenant, name="model-weights"):
    return services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant, name=name)


def assets_added_to(*tenants):
    """`add_rows` for tests.query_counts: n more assets in each of these tenants."""

    def add_rows(n):
        for tenant in tenants:
            for _ in range(n):
                new_asset(tenant, f"asset-{uuid.uuid4().hex[:6]}")

    return add_rows


def requested(tenant, name="dataset", *, delegate=True):
    return services.asset_request_approval(
        actor=SYSTEM_ACTOR, asset=new_asset(tenant, name), delegate=delegate
    )


def delegated(tenant, name="model-weights"):
    """A Requested asset whose Workflow Service instance is recorded, and the instance."""
    asset = requested(tenant, name)
    instance = uuid.uuid4()
    assert services.asset_record_delegation(
        asset=asset, approval_request_id=asset.approval_request_id, workflow_instance_id=instance
    )
    with tenant_scope(tenant):
        asset.refresh_from_db()
    return asset, instance


def reload(asset):
    with tenant_scope(asset.tenant_id):
        return Asset.objects.get(pk=asset.pk)


def status_of(asset):
    with tenant_scope(asset.tenant_id):
        asset.refresh_from_db()
    return asset.status


def events(event_type=None):
    with system_scope():
        qs = OutboxEvent.objects.filter(topic="assets.asset").order_by("id")
        if event_type:
            qs = qs.filter(event_type=event_type)
        return list(qs.values_list("event_type", "payload"))


def outcomes():
    """The callbacks' receipts' outcomes, in the order they came."""
    with system_scope():
        return list(WorkflowCallback.objects.order_by("id").values_list("outcome", flat=True))
