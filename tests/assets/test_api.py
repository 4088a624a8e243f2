"""The assets API: CRUD in the caller's tenant, approval actions, filters."""

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from guardian.shortcuts import assign_perm

from apps.assets import services
from apps.assets.models import Asset
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from tests.assets.factories import assets_added_to, delegated, new_asset
from tests.conftest import bearer
from tests.factories import member, service_token
from tests.query_counts import assert_flat_query_count, queries_for

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


@pytest.mark.parametrize("query", ["status=approved", "workflow_managed=true"])
def test_a_filtered_platform_list_query_count_does_not_grow(api, tenant_a, tenant_b, query):
    client = bearer(api, service_token(scopes=["assets:read"]))
    client.get(ASSETS)  # the first request fills the auth cache
    unfiltered = queries_for(lambda: client.get(ASSETS))
    filtered = assert_flat_query_count(
        assets_added_to(tenant_a, tenant_b), lambda: client.get(f"{ASSETS}?{query}")
    )
    assert filtered == unfiltered


# Two tenants' assets, most approved, some drafts and rejections, few requested and a
# rare retired one (1 in 500): the mix where walking the newest-first index and
# dropping the other statuses reads most of the table for one page.
MIXED_ASSETS = """
INSERT INTO assets_asset (id, tenant_id, name, description, status, workflow_instance_id,
    approval_request_id, decided_by, decision_reason, created_at, updated_at)
SELECT gen_random_uuid(), %(tenant)s, 'asset-' || i, '',
    CASE WHEN i %% 500 = 0 THEN 'retired' WHEN i %% 50 = 1 THEN 'requested'
         WHEN i %% 10 = 5 THEN 'draft' WHEN i %% 7 = 0 THEN 'rejected' ELSE 'approved' END,
    CASE WHEN i %% 50 = 1 THEN gen_random_uuid() END, NULL, '', '',
    now() - i * interval '1 second', now()
FROM generate_series(1, 25000) AS i
"""


def _rows_read_from_assets(plan) -> int:
    nodes, read = [plan], 0
    while nodes:
        node = nodes.pop()
        nodes += node.get("Plans", ())
        if node.get("Relation Name") == Asset._meta.db_table:
            read += node["Actual Rows"] * node["Actual Loops"]
            read += node.get("Rows Removed by Filter", 0)
    return read


def test_a_platform_list_by_status_reads_about_a_page_of_assets_whatever_the_status(
    api, tenant_a, tenant_b
):
    """Each status's first two pages, for a platform caller (system scope), as ANALYZE
    leaves the statistics and the planner's settings as they are: the page statement
    reads about a page of assets, not every asset of the other statuses before it."""
    for tenant in (tenant_a, tenant_b):
        with tenant_scope(tenant), connection.cursor() as cursor:
            cursor.execute(MIXED_ASSETS, {"tenant": tenant.pk})
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {Asset._meta.db_table}")
    client = bearer(api, service_token(scopes=["assets:read"]))
    for status in Asset.Status.values:
        url = f"{ASSETS}?status={status}&page_size=50"
        for _ in range(2):
            with CaptureQueriesContext(connection) as seen:
                page = client.get(url)
            assert page.status_code == 200 and len(page.json()["results"]) == 50
            (sql,) = [q["sql"] for q in seen.captured_queries if Asset._meta.db_table in q["sql"]]
            with system_scope(), connection.cursor() as cursor:
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql)
                plan = cursor.fetchone()[0]
            plan = json.loads(plan) if isinstance(plan, str) else plan
            assert _rows_read_from_assets(plan[0]["Plan"]) <= 51, (status, plan)
            url = page.json()["next"]
