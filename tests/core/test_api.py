"""The API conventions every app shares (apps.core.api), through the tenancy API:
problem answers, Idempotency-Key, ETag and If-Match, throttling, the OpenAPI schema."""

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db import IntegrityError
from rest_framework.test import APIClient

from apps.core.api.exceptions import problem_exception_handler
from apps.core.context import SYSTEM_ACTOR
from apps.core.models import IdempotencyRecord
from apps.core.scope import system_scope
from apps.tenancy import services
from apps.tenancy.middleware import ACTING_TENANT_SESSION_KEY
from apps.tenancy.models import Membership, Tenant
from tests.conftest import bearer
from tests.factories import UserFactory, service_token
from tests.support import free_port, problem, run_concurrently

pytestmark = pytest.mark.django_db

TENANTS = "/api/v1/tenancy/tenants/"
MEMBERSHIPS = "/api/v1/tenancy/memberships/"


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
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", "/dev/null")


def test_the_published_openapi_schema_is_current(tmp_path):
    """docs/openapi.yaml is what integrating teams read without running Steward."""
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


def test_a_caller_is_let_through_when_redis_cannot_count_its_requests(
    api, platform_token, settings
):
    # given: a rate, and Redis gone from the address Steward has (a failover under way)
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"caller": "3/min"},
    }
    settings.REDIS_URL = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    client = bearer(api, platform_token)
    # when / then: answered, never a 500, with nothing to count them against
    assert {client.get(TENANTS).status_code for _ in range(5)} == {200}


def test_database_and_model_validation_errors_become_problems():
    conflict = problem_exception_handler(IntegrityError("duplicate key"), {})
    assert (conflict.status_code, conflict.data["code"]) == (409, "conflict")
    invalid = problem_exception_handler(ValidationError({"slug": ["taken"]}), {})
    assert (invalid.status_code, invalid.data["code"]) == (400, "invalid")
    assert invalid.data["errors"]["slug"][0]["message"] == "taken"


def test_an_idempotency_key_is_scoped_to_the_tenant_acted_for(api, tenant_a, tenant_b, admin_a):
    UserFactory(username="joiner")
    services.membership_set(actor=SYSTEM_ACTOR, tenant=tenant_b, user=admin_a, role="admin")
    api.force_login(admin_a)
    body = {"username": "joiner", "role": "member"}
    for tenant in (tenant_a, tenant_b):
        session = api.session
        session[ACTING_TENANT_SESSION_KEY] = str(tenant.pk)
        session.save()
        response = api.post(MEMBERSHIPS, body, HTTP_IDEMPOTENCY_KEY="add-joiner")
        # An invitation now (Issue #19): 202 rather than 201.
        assert response.status_code == 202 and response.json()["tenant"] == tenant.slug
    with system_scope():
        assert Membership.objects.filter(user__username="joiner").count() == 2
