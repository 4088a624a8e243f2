"""The tenancy API: its callers (tokens, scopes), its endpoints, and their lists' costs.
The conventions every app's API shares are tests/core/test_api.py's."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.eventing.models import OutboxEvent
from apps.tenancy import services
from apps.tenancy.models import ApiToken, AuditEvent, DataClass, Membership, Tenant
from apps.tenancy.services import api_token_revoke
from tests.conftest import bearer
from tests.factories import RegionFactory, TenantFactory, UserFactory, member, service_token
from tests.query_counts import assert_flat_query_count
from tests.support import problem

pytestmark = pytest.mark.django_db

TENANTS = "/api/v1/tenancy/tenants/"
MEMBERSHIPS = "/api/v1/tenancy/memberships/"


def audit_count():
    with system_scope():
        return AuditEvent.objects.count()


# --------------------------------------------------------------------------- authentication


def test_no_credentials_get_401(api):
    problem(api.get(TENANTS), 401, "not_authenticated")


def test_a_wrong_token_gets_401_and_changes_nothing(api, region):
    api.credentials(HTTP_AUTHORIZATION="Bearer stw_nothere_nothing")
    before = audit_count()
    problem(
        api.post(TENANTS, {"slug": "x", "name": "X", "home_region": region.slug}),
        401,
        "token_invalid",
    )
    assert not Tenant.objects.filter(slug="x").exists()
    assert audit_count() == before


def test_an_expired_token_gets_401(api, region):
    issued = service_token(expires_at=timezone.now() + timedelta(seconds=30))
    ApiToken.objects.filter(pk=issued.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    problem(bearer(api, issued).get(TENANTS), 401, "token_expired")


def test_a_revoked_token_gets_401(api):
    issued = service_token()
    api_token_revoke(actor=SYSTEM_ACTOR, token=issued.token)
    problem(bearer(api, issued).get(TENANTS), 401, "token_revoked")


def test_tokens_are_stored_only_as_digests_and_record_last_use(api, platform_token):
    token = ApiToken.objects.get(pk=platform_token.token.pk)
    assert platform_token.secret not in (token.digest, token.prefix)
    assert token.last_used_at is None
    assert bearer(api, platform_token).get(TENANTS).status_code == 200
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_a_missing_scope_gets_403_and_changes_nothing(api, region):
    issued = service_token(scopes=["tenancy:read"])
    client = bearer(api, issued)
    assert client.get(TENANTS).status_code == 200
    problem(
        client.post(TENANTS, {"slug": "x", "name": "X", "home_region": region.slug}),
        403,
        "missing_scope",
    )
    assert not Tenant.objects.filter(slug="x").exists()
    other = service_token(scopes=["assets:read"])
    problem(bearer(APIClient(), other).get(TENANTS), 403, "missing_scope")


# --------------------------------------------------------------------------- tenancy endpoints


def test_platform_service_creates_a_tenant_with_an_audit_row(api, platform_token, region):
    response = bearer(api, platform_token).post(
        TENANTS,
        {
            "slug": "delta",
            "name": "Delta",
            "home_region": region.slug,
            "environment_class": "production",
        },
    )
    assert response.status_code == 201, response.content
    tenant = Tenant.objects.get(slug="delta")
    assert response.json()["id"] == str(tenant.pk)
    with system_scope():
        event = AuditEvent.objects.get(action="tenant.create", object_id=str(tenant.pk))
    assert event.actor_label == "service:platform"
    assert event.tenant_id == tenant.pk
    assert event.changes["environment_class"] == [None, "production"]


def test_a_tenant_bound_caller_sees_only_its_tenant(api, tenant_a, tenant_b):
    issued = service_token(tenant=tenant_a)
    slugs = [t["slug"] for t in bearer(api, issued).get(TENANTS).json()["results"]]
    assert slugs == ["alpha"]
    problem(bearer(api, issued).get(f"{TENANTS}{tenant_b.pk}/"), 404, "not_found")


def test_a_cross_tenant_object_id_gets_404_and_changes_nothing(
    api, tenant_a, tenant_b, admin_a, member_b
):
    api.force_login(admin_a)
    with system_scope():
        membership_b = Membership.objects.get(tenant=tenant_b)
    problem(api.delete(f"{MEMBERSHIPS}{membership_b.pk}/"), 404, "not_found")
    with system_scope():
        assert Membership.objects.filter(pk=membership_b.pk).exists()


def test_a_tenant_admin_adds_members_only_to_their_tenant(api, tenant_a, admin_a):
    UserFactory(username="newcomer")
    api.force_login(admin_a)
    response = api.post(MEMBERSHIPS, {"username": "newcomer", "role": "member"})
    # An invitation now (Issue #19): 202, and the membership waits on newcomer's consent.
    assert response.status_code == 202, response.content
    assert response.json()["tenant"] == "alpha"
    with system_scope():
        assert Membership.objects.filter(user__username="newcomer", tenant=tenant_a).exists()


def test_a_member_cannot_change_anything(api, tenant_b, member_b):
    api.force_login(member_b)
    problem(
        api.post(MEMBERSHIPS, {"username": "member-b", "role": "admin"}), 403, "permission_denied"
    )


def test_whoami_tells_a_service_its_scope(api, tenant_a):
    issued = service_token(tenant=tenant_a, scopes=["tenancy:read"])
    body = bearer(api, issued).get("/api/v1/whoami/").json()
    assert body == {
        "kind": "service",
        "name": issued.token.service_account.name,
        "tenant": "alpha",
        "platform_wide": False,
        "scopes": ["tenancy:read"],
    }


def test_the_audit_trail_is_for_operators_tenant_admins_and_services(api, admin_a, member_b):
    api.force_login(member_b)
    problem(api.get("/api/v1/tenancy/audit-events/"), 403, "permission_denied")
    api.force_login(admin_a)
    rows = api.get("/api/v1/tenancy/audit-events/").json()["results"]
    assert rows and {row["tenant"] for row in rows} == {"alpha"}


def test_creating_and_changing_a_tenant_announces_it_on_the_tenant_topic(
    api, platform_token, region
):
    client = bearer(api, platform_token)
    created = client.post(TENANTS, {"slug": "kilo", "name": "Kilo", "home_region": region.slug})
    client.patch(f"{TENANTS}{created.json()['id']}/", {"name": "Kilo Ltd"})
    with system_scope():
        events = list(OutboxEvent.objects.filter(topic="tenancy.tenant").order_by("id"))
    assert [e.event_type for e in events] == ["tenant.created", "tenant.updated"]
    assert {str(e.tenant_id) for e in events} == {created.json()["id"]}
    assert events[0].payload["slug"] == "kilo"
    assert events[1].payload["changes"] == {"name": ["Kilo", "Kilo Ltd"]}


# --------------------------------------------------------------------------- the catalog


def test_a_region_change_is_validated_and_audited_before_and_after(api, operator, region):
    api.force_login(operator)
    url = f"/api/v1/tenancy/regions/{region.pk}/"
    changed = api.patch(url, {"name": "West Europe", "jurisdiction": "EU"}, format="json")
    assert changed.status_code == 200, changed.content
    with system_scope():
        event = AuditEvent.objects.get(action="region.update", object_id=str(region.pk))
    assert event.changes == {"name": [region.name, "West Europe"]}
    refused = api.patch(url, {"slug": "not a slug"}, format="json")
    problem(refused, 400, "invalid")
    region.refresh_from_db()
    assert region.slug == "westeurope"


# --------------------------------------------------------------------------- list costs


def add_tenants_with_members(region):
    def add_rows(n):
        for _ in range(n):
            tenant = TenantFactory(home_region=region)
            member(tenant, role="admin")
            services.service_account_create(
                actor=SYSTEM_ACTOR, name=f"svc-{tenant.slug}", tenant=tenant
            )

    return add_rows


@pytest.mark.parametrize(
    "url", [TENANTS, MEMBERSHIPS, "/api/v1/tenancy/audit-events/"], ids=lambda u: u.split("/")[-2]
)
def test_tenancy_lists_cost_the_same_whatever_the_rows(api, operator, region, url):
    api.force_login(operator)
    assert_flat_query_count(add_tenants_with_members(region), lambda: api.get(url))


def test_the_region_list_costs_the_same_whatever_the_rows(api, operator):
    api.force_login(operator)

    def add_rows(n):
        for _ in range(n):
            RegionFactory()

    assert_flat_query_count(add_rows, lambda: api.get("/api/v1/tenancy/regions/"))


def test_the_data_class_list_costs_the_same_whatever_the_rows(api, operator):
    api.force_login(operator)
    made = iter(range(1000))

    def add_rows(n):
        for _ in range(n):
            number = next(made)
            DataClass.objects.create(slug=f"class-{number}", name=f"Class {number}")

    assert_flat_query_count(add_rows, lambda: api.get("/api/v1/tenancy/data-classes/"))


def test_a_persons_invitation_list_costs_the_same_whatever_the_invitations(api, region):
    invited = UserFactory()
    api.force_login(invited)

    def invite_from_new_tenants(n):
        for _ in range(n):
            services.membership_invite(
                actor=SYSTEM_ACTOR,
                tenant=TenantFactory(home_region=region),
                username=invited.username,
                role="member",
            )

    assert_flat_query_count(
        invite_from_new_tenants, lambda: api.get("/api/v1/tenancy/invitations/")
    )
    assert len(api.get("/api/v1/tenancy/invitations/").json()) == 10
