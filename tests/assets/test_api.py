"""The assets API: CRUD in the caller's tenant, approval actions, filters."""

import uuid

import pytest
from guardian.shortcuts import assign_perm

from apps.assets import services
from apps.assets.models import Asset
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import tenant_scope
from tests.factories import member

ASSETS = "/api/v1/assets/assets/"
pytestmark = pytest.mark.django_db


def test_a_member_creates_and_requests_and_an_admin_decides(api, tenant_a, admin_a):
    author = member(tenant_a, username="author")
    api.force_login(author)
    created = api.post(ASSETS, {"name": "churn-model", "description": "v3"})
    assert created.status_code == 201 and created.json()["tenant"] == "alpha"
    url = f"{ASSETS}{created.json()['id']}/"
    requested = api.post(f"{url}request-approval/", {"delegate": False})
    assert requested.json()["status"] == "requested"
    refused = api.post(f"{url}approve/", {})
    assert refused.status_code == 403
    api.force_login(admin_a)
    approved = api.post(f"{url}approve/", {"reason": "reviewed"})
    assert approved.status_code == 200 and approved.json()["status"] == "approved"
    again = api.post(f"{url}reject/", {})
    assert again.status_code == 409 and again.json()["code"] == "invalid_transition"


def test_the_object_permission_lets_a_member_decide_one_asset(api, tenant_a):
    decider = member(tenant_a, username="decider")
    mine = services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="mine")
    other = services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="other")
    for asset in (mine, other):
        services.asset_request_approval(actor=SYSTEM_ACTOR, asset=asset, delegate=False)
    assign_perm("assets.approve_asset", decider, mine)
    api.force_login(decider)
    assert api.post(f"{ASSETS}{mine.pk}/approve/", {}).status_code == 200
    assert api.post(f"{ASSETS}{other.pk}/approve/", {}).status_code == 403


def test_a_workflow_managed_asset_cannot_be_decided_by_hand(api, tenant_a, admin_a):
    asset = services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="wf")
    asset = services.asset_request_approval(actor=SYSTEM_ACTOR, asset=asset, delegate=True)
    services.asset_record_delegation(
        asset=asset,
        approval_request_id=asset.approval_request_id,
        workflow_instance_id=uuid.uuid4(),
    )
    api.force_login(admin_a)
    response = api.post(f"{ASSETS}{asset.pk}/approve/", {})
    assert response.status_code == 409 and response.json()["code"] == "workflow_managed"


def test_filters_by_status_workflow_managed_and_instance(api, tenant_a, admin_a):
    waiting = services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="waiting")
    waiting = services.asset_request_approval(actor=SYSTEM_ACTOR, asset=waiting, delegate=True)
    instance = uuid.uuid4()
    services.asset_record_delegation(
        asset=waiting,
        approval_request_id=waiting.approval_request_id,
        workflow_instance_id=instance,
    )
    services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="draft")
    api.force_login(admin_a)

    def names(**params):
        return sorted(a["name"] for a in api.get(ASSETS, params).json()["results"])

    assert names(workflow_managed="true") == ["waiting"]
    assert names(workflow_managed="false") == ["draft"]
    assert names(status="draft") == ["draft"]
    assert names(workflow_instance_id=str(instance)) == ["waiting"]


def test_another_tenants_asset_is_not_there(api, tenant_b, admin_a):
    foreign = services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_b, name="theirs")
    api.force_login(admin_a)
    assert api.get(f"{ASSETS}{foreign.pk}/").status_code == 404
    assert api.post(f"{ASSETS}{foreign.pk}/request-approval/", {}).status_code == 404
    with tenant_scope(tenant_b):
        assert Asset.objects.get(pk=foreign.pk).status == "draft"


def test_the_asset_list_query_count_does_not_grow(api, tenant_a, admin_a):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    api.force_login(admin_a)

    def count():
        with CaptureQueriesContext(connection) as ctx:
            assert api.get(ASSETS).status_code == 200
        return len(ctx.captured_queries)

    for n in range(2):
        services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name=f"a{n}")
    few = count()
    for n in range(8):
        services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name=f"b{n}")
    assert count() == few
