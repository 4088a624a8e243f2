import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.assets import services
from apps.assets.models import Asset
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import tenant_scope
from tests.assets.factories import assets_added_to, delegated
from tests.factories import member
from tests.query_counts import assert_flat_query_count

pytestmark = pytest.mark.django_db


def test_the_asset_pages_show_the_reference_history_and_callbacks(
    client, tenant_a, admin_a, settings
):
    settings.STEWARD_WORKFLOW_CALLBACK_SECRET = "s"
    asset, instance = delegated(tenant_a, "forecast")
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


@pytest.mark.parametrize("caller", ["admin_a", "operator"])
def test_the_asset_list_query_count_does_not_grow(request, client, tenant_a, tenant_b, caller):
    client.force_login(request.getfixturevalue(caller))
    assert_flat_query_count(assets_added_to(tenant_a, tenant_b), lambda: client.get("/assets/"))


@pytest.mark.parametrize("caller", ["admin_a", "operator"])
def test_the_asset_list_counts_its_matches_without_the_tables_its_cells_show(
    request, client, tenant_a, tenant_b, caller
):
    # given assets in two tenants, one of them approved, and a list read as `.values()`
    # that joins each row's tenant for its cells
    assets_added_to(tenant_a, tenant_b)(3)
    services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="kept")
    client.force_login(request.getfixturevalue(caller))
    client.get("/assets/")
    for query, expected in (({}, {"admin_a": 4, "operator": 7}), ({"q": "kept"}, 1)):
        # when the list is read
        with CaptureQueriesContext(connection) as seen:
            page = client.get("/assets/", query)
        # then its count is the rows it lists, counted from the assets alone
        counts = [q["sql"] for q in seen.captured_queries if "COUNT(*)" in q["sql"]]
        assert len(counts) == 1 and "tenancy_tenant" not in counts[0]
        want = expected[caller] if isinstance(expected, dict) else expected
        assert page.context["paginator"].count == want == len(page.context["object_list"])
        assert f"{want} in all" in page.content.decode()


def test_the_asset_list_shows_the_acting_tenants_assets_or_all_of_them(
    client, tenant_a, tenant_b, admin_a, operator
):
    for tenant in (tenant_a, tenant_b):
        services.asset_create(actor=SYSTEM_ACTOR, tenant=tenant, name=f"of-{tenant.slug}")

    def listed():
        return sorted(a.name for a in client.get("/assets/").context["object_list"])

    client.force_login(admin_a)
    assert listed() == [f"of-{tenant_a.slug}"]
    client.force_login(operator)  # acting for no tenant: all of them
    assert listed() == sorted(f"of-{t.slug}" for t in (tenant_a, tenant_b))


def test_a_member_creates_an_asset_in_the_tenant_they_act_for(client, tenant_a):
    client.force_login(member(tenant_a, username="author"))
    assert "/assets/new/" in client.get("/assets/").content.decode()
    response = client.post("/assets/new/", {"name": "churn model", "description": "weekly"})
    with tenant_scope(tenant_a):
        created = Asset.objects.get(name="churn model")
    assert response.status_code == 302 and response.url == created.get_absolute_url()
    assert created.status == "draft" and created.description == "weekly"


def test_creating_an_asset_needs_a_tenant_and_a_name(client, tenant_a, operator):
    client.force_login(operator)  # acting for all tenants, no tenant chosen
    asked = client.get("/assets/new/")
    assert asked.status_code == 200
    assert "Choose the tenant to act for" in asked.content.decode()
    page = client.post("/assets/new/", {"name": "orphan"}).content.decode()
    assert "Choose the tenant to act for" in page
    client.force_login(member(tenant_a, username="author"))
    assert client.post("/assets/new/", {"name": ""}).status_code == 200
    with tenant_scope(tenant_a):
        assert not Asset.objects.exists()


def test_creating_an_asset_asks_a_stranger_to_sign_in(client):
    response = client.get("/assets/new/")
    assert response.status_code == 302 and response.url.startswith("/login/")
