"""The tenancy API and the API conventions every app shares."""

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.core.models import IdempotencyRecord
from apps.core.scope import system_scope
from apps.tenancy.models import ApiToken, AuditEvent, Membership, Tenant
from tests.conftest import bearer
from tests.factories import service_token
from tests.support import run_concurrently

pytestmark = pytest.mark.django_db

TENANTS = "/api/v1/tenancy/tenants/"
MEMBERSHIPS = "/api/v1/tenancy/memberships/"


def problem(response, status, code):
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/problem+json"
    body = response.json()
    assert body["code"] == code, body
    assert body["status"] == status
    return body


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
    from apps.core.context import SYSTEM_ACTOR
    from apps.tenancy.services import api_token_revoke

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


def test_malformed_json_gets_400_and_changes_nothing(api, platform_token):
    response = bearer(api, platform_token).generic(
        "POST", TENANTS, '{"slug": "x",', content_type="application/json"
    )
    problem(response, 400, "malformed_request")
    assert not Tenant.objects.filter(slug="x").exists()


def test_an_unknown_field_gets_400_naming_it(api, platform_token, region):
    response = bearer(api, platform_token).post(
        TENANTS, {"slug": "x", "name": "X", "home_region": region.slug, "colour": "red"}
    )
    body = problem(response, 400, "invalid")
    assert body["errors"]["colour"][0]["code"] == "unknown_field"
    assert not Tenant.objects.filter(slug="x").exists()


def test_invalid_values_get_400_with_field_errors(api, platform_token):
    response = bearer(api, platform_token).post(
        TENANTS, {"slug": "not a slug", "name": "", "home_region": "mars"}
    )
    body = problem(response, 400, "invalid")
    assert set(body["errors"]) == {"slug", "name", "home_region"}


def test_a_tenant_admin_adds_members_only_to_their_tenant(api, tenant_a, admin_a):
    from tests.factories import UserFactory

    UserFactory(username="newcomer")
    api.force_login(admin_a)
    response = api.post(MEMBERSHIPS, {"username": "newcomer", "role": "member"})
    assert response.status_code == 201, response.content
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


# --------------------------------------------------------------------------- idempotency


def test_the_same_idempotency_key_and_body_replays_the_stored_answer(api, platform_token, region):
    client = bearer(api, platform_token)
    body = {"slug": "echo", "name": "Echo", "home_region": region.slug}
    first = client.post(TENANTS, body, HTTP_IDEMPOTENCY_KEY="k-1")
    second = client.post(TENANTS, dict(reversed(list(body.items()))), HTTP_IDEMPOTENCY_KEY="k-1")
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json()
    assert second["Idempotent-Replayed"] == "true"
    assert Tenant.objects.filter(slug="echo").count() == 1


def test_the_same_idempotency_key_with_another_body_gets_409(api, platform_token, region):
    client = bearer(api, platform_token)
    client.post(
        TENANTS,
        {"slug": "echo", "name": "Echo", "home_region": region.slug},
        HTTP_IDEMPOTENCY_KEY="k-2",
    )
    response = client.post(
        TENANTS,
        {"slug": "foxtrot", "name": "Foxtrot", "home_region": region.slug},
        HTTP_IDEMPOTENCY_KEY="k-2",
    )
    problem(response, 409, "idempotency_key_reused")
    assert not Tenant.objects.filter(slug="foxtrot").exists()


def test_a_failed_request_does_not_burn_its_idempotency_key(api, platform_token, region):
    client = bearer(api, platform_token)
    bad = client.post(
        TENANTS,
        {"slug": "golf", "name": "", "home_region": region.slug},
        HTTP_IDEMPOTENCY_KEY="k-3",
    )
    assert bad.status_code == 400
    assert not IdempotencyRecord.objects.filter(key="k-3").exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_requests_with_one_idempotency_key_create_once(region):
    issued = service_token(name="racer")
    body = {"slug": "hotel", "name": "Hotel", "home_region": region.slug}

    def send():
        client = bearer(APIClient(), issued)
        return client.post(TENANTS, body, HTTP_IDEMPOTENCY_KEY="k-race").status_code

    statuses, errors = run_concurrently(send, 4)
    assert errors == []
    assert statuses == [201] * 4
    assert Tenant.objects.filter(slug="hotel").count() == 1


# --------------------------------------------------------------------------- ETag / If-Match


def test_reads_carry_an_etag_and_honour_if_none_match(api, platform_token, tenant_a):
    client = bearer(api, platform_token)
    first = client.get(f"{TENANTS}{tenant_a.pk}/")
    assert first.status_code == 200 and first["ETag"]
    assert (
        client.get(f"{TENANTS}{tenant_a.pk}/", HTTP_IF_NONE_MATCH=first["ETag"]).status_code == 304
    )


def test_an_update_with_a_stale_if_match_gets_412_and_changes_nothing(
    api, platform_token, tenant_a
):
    client = bearer(api, platform_token)
    etag = client.get(f"{TENANTS}{tenant_a.pk}/")["ETag"]
    ok = client.patch(f"{TENANTS}{tenant_a.pk}/", {"name": "Alpha One"}, HTTP_IF_MATCH=etag)
    assert ok.status_code == 200, ok.content
    assert ok["ETag"] != etag
    stale = client.patch(f"{TENANTS}{tenant_a.pk}/", {"name": "Alpha Two"}, HTTP_IF_MATCH=etag)
    problem(stale, 412, "stale_etag")
    tenant_a.refresh_from_db()
    assert tenant_a.name == "Alpha One"


# --------------------------------------------------------------------------- schema and docs


def test_openapi_schema_and_swagger_ui_are_served_locally(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/tenancy/tenants/" in schema.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/" in html
    assert "cdn" not in html.lower()


def test_the_openapi_schema_generates_without_warnings():
    from django.core.management import call_command

    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")


def test_the_published_openapi_schema_is_current(tmp_path):
    """docs/openapi.yaml is what integrating teams read without running Steward."""
    from pathlib import Path

    from django.core.management import call_command

    fresh = tmp_path / "openapi.yaml"
    call_command("spectacular", "--file", str(fresh))
    published = Path(__file__).resolve().parents[2] / "docs" / "openapi.yaml"
    assert published.read_text() == fresh.read_text(), "out of date: run `make openapi`"


def test_a_caller_over_its_rate_gets_429_problem(api, platform_token, settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"caller": "3/min"},
    }
    client = bearer(api, platform_token)
    assert [client.get(TENANTS).status_code for _ in range(3)] == [200, 200, 200]
    response = client.get(TENANTS)
    problem(response, 429, "throttled")
    assert int(response["Retry-After"]) > 0


def test_the_audit_trail_is_for_operators_tenant_admins_and_services(api, admin_a, member_b):
    api.force_login(member_b)
    problem(api.get("/api/v1/tenancy/audit-events/"), 403, "permission_denied")
    api.force_login(admin_a)
    rows = api.get("/api/v1/tenancy/audit-events/").json()["results"]
    assert rows and {row["tenant"] for row in rows} == {"alpha"}


def test_database_and_model_validation_errors_become_problems():
    from django.core.exceptions import ValidationError
    from django.db import IntegrityError

    from apps.core.api.exceptions import problem_exception_handler

    conflict = problem_exception_handler(IntegrityError("duplicate key"), {})
    assert (conflict.status_code, conflict.data["code"]) == (409, "conflict")
    invalid = problem_exception_handler(ValidationError({"slug": ["taken"]}), {})
    assert (invalid.status_code, invalid.data["code"]) == (400, "invalid")
    assert invalid.data["errors"]["slug"][0]["message"] == "taken"


def test_creating_and_changing_a_tenant_announces_it_on_the_tenant_topic(
    api, platform_token, region
):
    from apps.eventing.models import OutboxEvent

    client = bearer(api, platform_token)
    created = client.post(TENANTS, {"slug": "kilo", "name": "Kilo", "home_region": region.slug})
    client.patch(f"{TENANTS}{created.json()['id']}/", {"name": "Kilo Ltd"})
    with system_scope():
        events = list(OutboxEvent.objects.filter(topic="tenancy.tenant").order_by("id"))
    assert [e.event_type for e in events] == ["tenant.created", "tenant.updated"]
    assert {str(e.tenant_id) for e in events} == {created.json()["id"]}
    assert events[0].payload["slug"] == "kilo"
    assert events[1].payload["changes"] == {"name": ["Kilo", "Kilo Ltd"]}


def test_an_idempotency_key_is_scoped_to_the_tenant_acted_for(api, tenant_a, tenant_b, admin_a):
    from apps.tenancy.middleware import ACTING_TENANT_SESSION_KEY
    from tests.factories import UserFactory

    UserFactory(username="joiner")
    from apps.core.context import SYSTEM_ACTOR
    from apps.tenancy import services

    services.membership_set(actor=SYSTEM_ACTOR, tenant=tenant_b, user=admin_a, role="admin")
    api.force_login(admin_a)
    body = {"username": "joiner", "role": "member"}
    for tenant in (tenant_a, tenant_b):
        session = api.session
        session[ACTING_TENANT_SESSION_KEY] = str(tenant.pk)
        session.save()
        response = api.post(MEMBERSHIPS, body, HTTP_IDEMPOTENCY_KEY="add-joiner")
        assert response.status_code == 201 and response.json()["tenant"] == tenant.slug
    with system_scope():
        assert Membership.objects.filter(user__username="joiner").count() == 2
