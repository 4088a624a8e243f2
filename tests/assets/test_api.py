"""The assets API: CRUD in the caller's tenant, approval actions, filters."""

import pytest
from guardian.shortcuts import assign_perm

from apps.assets import services
from apps.assets.models import Asset
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import tenant_scope
from tests.assets.factories import assets_added_to, delegated, new_asset
from tests.factories import member
from tests.query_counts import assert_flat_query_count

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
    asset, _ = delegated(tenant_a, "wf")
    api.force_login(admin_a)
    response = api.post(f"{ASSETS}{asset.pk}/approve/", {})
    assert response.status_code == 409 and response.json()["code"] == "workflow_managed"


def test_filters_by_status_workflow_managed_and_instance(api, tenant_a, admin_a):
    _, instance = delegated(tenant_a, "waiting")
    new_asset(tenant_a, "draft")
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


@pytest.mark.parametrize("caller", ["admin_a", "operator"])
def test_the_asset_list_query_count_does_not_grow(request, api, tenant_a, tenant_b, caller):
    api.force_login(request.getfixturevalue(caller))
    assert_flat_query_count(assets_added_to(tenant_a, tenant_b), lambda: api.get(ASSETS))
