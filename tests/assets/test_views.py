import uuid

import pytest

from apps.assets import services
from apps.assets.models import Asset
from apps.core.context import SYSTEM_ACTOR
from apps.tenancy.scope import tenant_scope
from tests.factories import member

pytestmark = pytest.mark.django_db


def test_the_asset_pages_show_the_reference_history_and_callbacks(
    client, tenant_a, admin_a, settings
):
    settings.STEWARD_WORKFLOW_CALLBACK_SECRET = "s"
    asset = services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="forecast")
    asset = services.asset_request_approval(actor=SYSTEM_ACTOR, asset=asset, delegate=True)
    instance = uuid.uuid4()
    services.asset_record_delegation(
        asset=asset, approval_request_id=asset.approval_request_id, workflow_instance_id=instance
    )
    services.callback_receive(
        workflow_instance_id=instance, approve=True, reason="", callback_id="cb-1"
    )
    services.drain_callbacks(tenant_a.pk)
    client.force_login(admin_a)
    listing = client.get("/assets/", {"status": "approved"})
    assert [a.pk for a in listing.context["object_list"]] == [asset.pk]
    page = client.get(f"/assets/{asset.pk}/").content.decode()
    assert str(instance) in page and "cb-1" in page and "asset.request_approval" in page


def test_deciding_in_the_console_needs_the_permission(client, tenant_a, admin_a):
    asset = services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="manual")
    client.force_login(member(tenant_a, username="viewer"))
    client.post(f"/assets/{asset.pk}/request-approval/", {})
    assert client.post(f"/assets/{asset.pk}/approve/").status_code == 403
    client.force_login(admin_a)
    client.post(f"/assets/{asset.pk}/approve/", {"reason": "fine"})
    with tenant_scope(tenant_a):
        decided = Asset.objects.get(pk=asset.pk)
    assert decided.status == "approved" and decided.decision_reason == "fine"


def test_the_asset_list_query_count_does_not_grow(client, tenant_a, admin_a):
    from tests.console.test_views import list_page_queries

    client.force_login(admin_a)
    for n in range(2):
        services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name=f"a{n}")
    few = list_page_queries(client, "/assets/")
    for n in range(8):
        services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name=f"b{n}")
    assert list_page_queries(client, "/assets/") == few
