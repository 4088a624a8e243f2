"""What fuzzing the API found, each pinned by a plain example so the fix stays."""

import pytest
from django.urls import resolve

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.tenancy.models import TOKEN_SCOPES, AuditEvent
from tests.conftest import bearer
from tests.factories import service_token

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"


@pytest.fixture
def platform(api):
    return bearer(api, service_token(name="platform", scopes=TOKEN_SCOPES))


def audit_rows():
    with system_scope():
        return AuditEvent.objects.count()


@pytest.mark.parametrize(
    "method, url",
    [
        ("post", "/api/v1/tenancy/audit-events/"),
        ("put", "/api/v1/tenancy/audit-events/1/"),
        ("post", "/api/v1/eventing/dead-letters/"),
        ("post", "/api/v1/governance/tasks/"),
        ("post", "/api/v1/registry/schema-versions/"),
        ("put", "/api/v1/assets/assets/00000000-0000-0000-0000-000000000000/"),
    ],
)
def test_read_only_collections_have_no_write_routes(platform, method, url):
    # They answered 500: the shared base class gave every viewset create and update.
    assert method not in resolve(url).func.actions
    answer = getattr(platform, method)(url, {}, format="json")
    # Refused as a write first where the caller may not write at all, else as a method.
    assert answer.status_code in (403, 405) and answer["Content-Type"] == PROBLEM


def test_a_cursor_the_list_did_not_give_out_is_bad_input(platform):
    answer = platform.get("/api/v1/tenancy/tenants/", {"cursor": "not-a-cursor"})
    assert answer.status_code == 400, answer.content
    assert answer.json()["code"] == "invalid_cursor"


def test_an_api_url_no_route_matches_is_a_problem_not_a_page(platform):
    # A dot in an identifier matches no router pattern.
    answer = platform.get("/api/v1/registry/schema-versions/0.5/")
    assert answer.status_code == 404 and answer["Content-Type"] == PROBLEM
    assert answer.json()["code"] == "not_found"
    registry = platform.get("/api/schema-registry/nothing/here")
    assert registry.status_code == 404 and registry.json()["error_code"] == 404


def test_a_refused_transition_keeps_the_http_status_in_the_problem(api, operator, tenant_a):
    from apps.assets import services as assets

    asset = assets.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="model")
    api.force_login(operator)
    answer = api.post(f"/api/v1/assets/assets/{asset.pk}/approve/", {"reason": "no"}, format="json")
    assert answer.status_code == 409, answer.content
    body = answer.json()
    assert body["status"] == 409 and body["current_status"] == "draft"


@pytest.mark.parametrize(
    "method, url",
    [
        ("post", "/api/schema-registry/subjects/orders.order-value/versions"),
        ("put", "/api/schema-registry/config/orders.order-value"),
    ],
)
def test_the_registry_refuses_a_body_that_is_not_an_object(platform, method, url):
    before = audit_rows()
    answer = getattr(platform, method)(url, [None, None], format="json")
    assert answer.status_code == 400, answer.content
    assert answer.json() == {"error_code": 400, "message": "The body must be a JSON object."}
    assert audit_rows() == before


def test_a_residency_rule_created_without_regions_applies_everywhere(api, operator):
    # It answered 500: the rule's regions were read before the rule was saved.
    api.force_login(operator)
    answer = api.post(
        "/api/v1/stores/residency/rules/",
        {"effect": "allow", "geographies": ["EU"], "reason": "fuzzed"},
        format="json",
    )
    assert answer.status_code == 201, answer.content
    assert answer.json()["regions"] == []


def test_verifying_evidence_echoes_the_digest_as_text(platform, tenant_a):
    document = {
        "order": "00000000-0000-0000-0000-000000000000",
        "tenant": str(tenant_a.pk),
        "kind": "export",
        "entries": [],
        "final_digest": 0,
    }
    answer = platform.post("/api/v1/governance/evidence/verify/", document, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["final_digest"] == "0"


def test_a_batch_status_report_without_a_status_is_bad_input(platform, tenant_a):
    from apps.compute.services import batch_submit

    batch, _ = batch_submit(
        actor=SYSTEM_ACTOR,
        tenant=tenant_a,
        idempotency_key="fuzz",
        workflow_instance_id="wf-1",
        workflow_step_id="step-1",
    )
    answer = platform.patch(f"/api/v1/compute/batches/{batch.pk}/", {}, format="json")
    assert answer.status_code == 400, answer.content
    assert "status" in answer.json()["errors"]


def test_the_schema_documents_the_idempotency_and_precondition_headers():
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]

    def headers(path, method):
        return {p["name"] for p in paths[path][method].get("parameters", []) if p["in"] == "header"}

    assert "Idempotency-Key" in headers("/api/v1/tenancy/tenants/", "post")
    assert "If-Match" in headers("/api/v1/tenancy/tenants/{id}/", "patch")
    assert not headers("/api/v1/tenancy/tenants/", "get")


def test_a_slug_with_a_nul_character_is_bad_input(platform):
    answer = platform.post(
        "/api/v1/stores/residency/evaluate/", {"store": "a\x00b", "region": "x"}, format="json"
    )
    assert answer.status_code == 400, answer.content
    assert answer.json()["errors"]["store"][0]["code"] == "null_characters_not_allowed"


def test_an_audit_filter_offset_postgresql_does_not_take_still_filters(platform):
    answer = platform.get(
        "/api/v1/tenancy/audit-events/", {"occurred_after": "2026-06-02T07:37:49-18:50"}
    )
    assert answer.status_code == 200, answer.content
