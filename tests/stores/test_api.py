"""The stores API: SetStoreBinding end to end through a real Celery worker, dry runs,
rules with their preview, and who may do what."""

import pytest
from celery.contrib.testing.worker import start_worker
from rest_framework.test import APIClient

from apps.core.scope import system_scope
from apps.stores import gating
from apps.stores.models import ResidencyRule, StoreBinding
from apps.tenancy.models import AuditEvent
from portal.celery import app
from tests.conftest import bearer
from tests.factories import member, service_token
from tests.query_counts import assert_flat_query_count
from tests.stores.factories import (
    another_profile,
    bind,
    certify,
    provisioned,
    record_evidence,
    record_evidence_of_each_kind,
    rule,
    stores_like,
)
from tests.support import wait_for

BINDINGS = "/api/v1/stores/bindings/"
RULES = "/api/v1/stores/residency/rules/"
STORES = "/api/v1/stores/stores/"
PROFILES = "/api/v1/stores/profiles/"
CERTIFICATIONS = "/api/v1/stores/certifications/"
EVIDENCE = "/api/v1/stores/evidence/"


def platform():
    return bearer(APIClient(), service_token(scopes=["stores:write"], name="provisioning"))


def status_of(binding_id):
    with system_scope():
        return StoreBinding.objects.get(pk=binding_id).status


@pytest.mark.django_db(transaction=True)
def test_set_store_binding_end_to_end_through_a_real_worker(
    tenant_a, store, profile, regions, local_broker
):
    rule("allow", geographies=["IL"])
    client = platform()
    body = {
        "store": store.slug,
        "tenant": tenant_a.slug,
        "profile": profile.slug,
        "region": "israelcentral",
    }
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        created = client.post(BINDINGS, body, format="json", HTTP_IDEMPOTENCY_KEY="bind-1")
        assert created.status_code == 201, created.content
        binding_id = created.json()["id"]
        again = client.post(BINDINGS, body, format="json", HTTP_IDEMPOTENCY_KEY="bind-1")
        assert again.json() == created.json()  # the recorded answer, replayed
        reused = client.post(
            BINDINGS, {**body, "region": "westeurope"}, format="json", HTTP_IDEMPOTENCY_KEY="bind-1"
        )
        assert reused.json()["code"] == "idempotency_key_reused"
        wait_for(lambda: status_of(binding_id) == "provisioned", timeout=30)
        url = f"{BINDINGS}{binding_id}/"
        active = client.post(f"{url}migrations-applied/")
        assert active.status_code == 200 and active.json()["status"] == "active"
        assert active.json()["key_reference"].startswith("local:")
        client.post(f"{url}retire/", {"reason": "tenant left"}, format="json")
        wait_for(lambda: status_of(binding_id) == "retired", timeout=30)
    shown = client.get(url).json()
    assert [step["to_status"] for step in shown["history"]] == [
        "requested",
        "provisioned",
        "active",
        "retiring",
        "retired",
    ]
    assert not (local_broker / binding_id / "key").exists()


@pytest.mark.django_db
def test_refusals_and_illegal_transitions_answer_with_codes(tenant_a, store, profile, regions):
    rule("allow", geographies=["IL"])
    client = platform()
    refused = client.post(
        BINDINGS,
        {"store": store.slug, "tenant": tenant_a.slug, "profile": profile.slug, "region": "eastus"},
        format="json",
    ).json()
    assert (
        refused["status"] == "refused" and "eastus" in refused["residency_verdict"]["explanation"]
    )
    requested = client.post(
        BINDINGS,
        {
            "store": store.slug,
            "tenant": tenant_a.slug,
            "profile": profile.slug,
            "region": "israelcentral",
        },
        format="json",
    ).json()
    early = client.post(f"{BINDINGS}{requested['id']}/migrations-applied/")
    assert early.status_code == 409 and early.json()["code"] == "invalid_transition"
    missing = client.post(
        BINDINGS,
        {"store": "nope", "profile": profile.slug, "region": "israelcentral"},
        format="json",
    )
    assert missing.status_code == 400


@pytest.mark.django_db
def test_the_what_if_evaluator_explains_both_verdicts(tenant_a, store, profile, regions):
    deny = rule("deny", tenant=tenant_a, geographies=["EU"], reason="contract")
    answer = (
        platform()
        .post(
            "/api/v1/stores/residency/evaluate/",
            {
                "store": store.slug,
                "tenant": tenant_a.slug,
                "profile": profile.slug,
                "region": "westeurope",
            },
            format="json",
        )
        .json()
    )
    assert answer["allowed"] is False and answer["residency"]["rule_id"] == deny.pk
    assert "contract" in answer["residency"]["explanation"]
    assert answer["workload"]["decision"] == "go"
    with system_scope():
        assert not StoreBinding.objects.exists()


@pytest.mark.django_db
def test_operators_edit_rules_with_a_preview_and_tenants_only_read(
    client, operator, tenant_a, store, profile, regions
):
    allow = rule("allow", geographies=["IL", "EU"])
    binding = provisioned(tenant_a, store, profile, regions["westeurope"])
    ops = APIClient()
    ops.force_login(operator)
    proposal = {"effect": "allow", "geographies": ["IL"]}
    preview = ops.post(f"{RULES}preview/?replacing={allow.pk}", proposal, format="json")
    assert preview.status_code == 200, preview.content
    assert [a["binding_id"] for a in preview.json()["affected"]] == [str(binding.pk)]
    assert status_of(binding.pk) == "provisioned"
    changed = ops.patch(f"{RULES}{allow.pk}/", {"geographies": ["IL"]}, format="json")
    assert changed.status_code == 200, changed.content
    with system_scope():
        assert "westeurope" in StoreBinding.objects.get(pk=binding.pk).violation
    tenant_service = bearer(
        APIClient(), service_token(tenant=tenant_a, scopes=["stores:write"], name="t-svc")
    )
    assert tenant_service.get(RULES).status_code == 200
    assert tenant_service.post(RULES, {"effect": "allow"}, format="json").status_code == 403
    assert [b["id"] for b in tenant_service.get(BINDINGS).json()["results"]] == [str(binding.pk)]


@pytest.mark.django_db
def test_operators_keep_the_catalog_audited_and_in_use_rows_cannot_go(
    client, operator, tenant_a, store, profile
):
    ops = APIClient()
    ops.force_login(operator)
    made = ops.post(
        "/api/v1/tenancy/regions/",
        {"slug": "swedencentral", "name": "Sweden Central", "jurisdiction": "EU"},
        format="json",
    )
    assert made.status_code == 201, made.content
    changed = ops.patch(f"/api/v1/stores/profiles/{profile.slug}/", {"name": "PG"}, format="json")
    assert changed.status_code == 200 and changed.json()["name"] == "PG"
    with system_scope():
        actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"region.create", "storeprofile.update"} <= actions
    in_use = ops.delete(f"/api/v1/stores/profiles/{profile.slug}/")
    assert in_use.status_code == 204  # nothing is bound to it yet
    gone = ops.delete(f"/api/v1/tenancy/regions/{tenant_a.home_region_id}/")
    assert gone.status_code == 409 and gone.json()["code"] == "in_use"
    tenant_service = bearer(
        APIClient(), service_token(tenant=tenant_a, scopes=["stores:write", "tenancy:write"])
    )
    refused = tenant_service.post(
        "/api/v1/stores/stores/", {"slug": "x", "name": "x"}, format="json"
    )
    assert refused.status_code == 403


@pytest.mark.django_db
def test_only_provisioning_reports_migrations_applied(tenant_a, store, profile, regions):
    rule("allow", geographies=["IL"])
    binding = provisioned(tenant_a, store, profile, regions["israelcentral"])
    tenant_service = bearer(
        APIClient(), service_token(tenant=tenant_a, scopes=["stores:write"], name="t-own")
    )
    url = f"{BINDINGS}{binding.pk}/migrations-applied/"
    assert tenant_service.post(url).status_code == 403
    assert platform().post(url).status_code == 200
    other = bearer(APIClient(), service_token(tenant=tenant_a, scopes=["stores:write"]))
    assert other.post(f"{BINDINGS}{binding.pk}/retire/").status_code == 200


@pytest.mark.django_db
def test_one_tenants_token_neither_sees_nor_touches_anothers_bindings_or_rules(
    tenant_a, tenant_b, store, profile, regions
):
    rule("allow", geographies=["IL"])
    private = rule("deny", tenant=tenant_a, geographies=["EU"], reason="a's own")
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    other = bearer(APIClient(), service_token(tenant=tenant_b, scopes=["stores:write"]))
    assert other.get(BINDINGS).json()["results"] == []
    assert other.get(f"{BINDINGS}{binding.pk}/").status_code == 404
    assert other.post(f"{BINDINGS}{binding.pk}/retire/").status_code == 404
    assert private.pk not in [r["id"] for r in other.get(RULES).json()["results"]]
    mismatch = other.post(
        BINDINGS,
        {
            "store": store.slug,
            "tenant": tenant_a.slug,
            "profile": profile.slug,
            "region": "israelcentral",
        },
        format="json",
    )
    assert mismatch.status_code == 400 and mismatch.json()["code"] == "tenant_mismatch"
    assert status_of(binding.pk) == "requested"


# --------------------------------------------------------------------------- the same answer


@pytest.mark.django_db
def test_the_console_and_the_api_refuse_the_same_rule_acts_alike(client, operator, tenant_a):
    """A member may not edit residency rules, and an exception needs a reason: the
    console and the API give the same refusal, and neither saves anything."""
    allow = rule("allow", geographies=["IL"])
    someone = member(tenant_a, username="someone")
    client.force_login(someone)
    api = APIClient()
    api.force_login(someone)
    assert client.post(f"/stores/rules/{allow.pk}/", {"effect": "deny"}).status_code == 403
    refused = api.patch(f"{RULES}{allow.pk}/", {"effect": "deny"}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "permission_denied"

    exception = {"effect": "allow", "tenant": tenant_a.slug, "is_exception": True}
    client.force_login(operator)
    api.force_login(operator)
    page = client.post("/stores/rules/new/", {**exception, "geographies": "US", "save": "1"})
    answer = api.post(RULES, {**exception, "geographies": ["US"]}, format="json")
    assert answer.status_code == 400 and answer.json()["code"] == "reason_required"
    assert page.status_code == 200 and answer.json()["detail"] in page.content.decode()
    with system_scope():
        assert list(ResidencyRule.objects.values_list("effect", flat=True)) == ["allow"]


# --------------------------------------------------------------------------- query counts


@pytest.mark.django_db
def test_the_binding_list_costs_the_same_queries_for_more_bindings(
    api, admin_a, tenant_a, store, profile, regions
):
    rule("allow", geographies=["IL"])
    api.force_login(admin_a)

    def add_rows(n):
        for more in stores_like(store, n):
            provisioned(tenant_a, more, profile, regions["israelcentral"])

    assert_flat_query_count(add_rows, lambda: api.get(BINDINGS))
    assert len(api.get(BINDINGS).json()["results"]) == 10


@pytest.mark.django_db
def test_the_rule_list_costs_the_same_queries_for_more_rules(api, operator, tenant_a, regions):
    api.force_login(operator)

    def add_rows(n):
        for _ in range(n):
            rule("allow", tenant=tenant_a, regions=list(regions.values()), reason="more")

    assert_flat_query_count(add_rows, lambda: api.get(RULES))


@pytest.mark.django_db
def test_the_catalog_lists_cost_the_same_queries_for_more_rows(api, operator, store, profile):
    api.force_login(operator)

    def add_profiles(n):
        for _ in range(n):
            more = another_profile(engine="mongodb", shape="dedicated_collections")
            certify(more, "hot_lookup")
            certify(more, "catalog")

    assert_flat_query_count(lambda n: stores_like(store, n), lambda: api.get(STORES))
    assert_flat_query_count(add_profiles, lambda: api.get(PROFILES))
    assert_flat_query_count(add_profiles, lambda: api.get(CERTIFICATIONS))


@pytest.mark.django_db
def test_activation_the_rules_refuse_is_a_409_residency_violation_changing_nothing(
    tenant_a, store, profile, regions
):
    allow = rule("allow", geographies=["EU"])
    binding = provisioned(tenant_a, store, profile, regions["westeurope"])
    with system_scope():  # narrowed behind the services' back: nothing flagged it yet
        ResidencyRule.objects.filter(pk=allow.pk).update(geographies=["IL"])
    refused = platform().post(f"{BINDINGS}{binding.pk}/migrations-applied/")
    assert refused.status_code == 409
    assert refused["Content-Type"].startswith("application/problem+json")
    problem = refused.json()
    assert problem["code"] == "residency_violation" and problem["rule_id"] == allow.pk
    assert "westeurope" in problem["explanation"] and problem["detail"] == problem["explanation"]
    with system_scope():
        kept = StoreBinding.objects.get(pk=binding.pk)
        assert kept.status == "provisioned" and kept.violation == ""
        assert kept.history.count() == 2


@pytest.mark.django_db
def test_operators_grant_an_exception_shown_on_the_binding(
    operator, tenant_a, store, profile, regions
):
    allow = rule("allow", geographies=["EU"])
    binding = provisioned(tenant_a, store, profile, regions["westeurope"])
    ops = APIClient()
    ops.force_login(operator)
    ops.patch(f"{RULES}{allow.pk}/", {"geographies": ["IL"]}, format="json")
    url = f"{BINDINGS}{binding.pk}/"
    flagged = ops.get(url).json()
    assert flagged["awaits_decision"] is True and flagged["exception_in_force"] is False
    grant = f"{url}grant-exception/"
    tenant_admin = bearer(
        APIClient(), service_token(tenant=tenant_a, scopes=["stores:write"], name="t-adm")
    )
    body = {"reason": "EU DPA until migration", "expires_at": "2099-01-01T00:00:00Z"}
    assert tenant_admin.post(grant, body, format="json").status_code == 403
    no_reason = ops.post(grant, {**body, "reason": ""}, format="json")
    assert no_reason.status_code == 400 and no_reason.json()["code"] == "reason_required"
    past = ops.post(grant, {**body, "expires_at": "2000-01-01T00:00:00Z"}, format="json")
    assert past.status_code == 400 and past.json()["code"] == "invalid_expiry"
    granted = ops.post(grant, body, format="json")
    assert granted.status_code == 200, granted.content
    shown = ops.get(url).json()
    assert shown["exception_in_force"] is True and shown["awaits_decision"] is False
    assert shown["exception_reason"] == "EU DPA until migration"
    assert shown["exception_expires_at"].startswith("2099-01-01")
    assert shown["exception_granted_by"] and shown["violation"] == ""
    again = ops.post(grant, body, format="json")
    assert again.status_code == 409 and again.json()["code"] == "not_flagged"


@pytest.mark.django_db
def test_revoking_a_certification_through_the_api_flags_the_bindings_relying_on_it(
    tenant_a, store, regions
):
    rule("allow", geographies=["IL"])
    queues = another_profile(provides_retention_cleanup=True)
    store.workload_class = "queue"
    store.save()
    client = platform()
    made = client.post(
        CERTIFICATIONS,
        {
            "profile": queues.slug,
            "workload_class": "queue",
            "benchmark_reference": "BM-3",
            "expires_at": "2099-01-01T00:00:00Z",
        },
        format="json",
    )
    assert made.status_code == 201, made.content
    assert made.json()["expires_at"].startswith("2099")
    record_evidence(queues, "queue")
    binding = provisioned(tenant_a, store, queues, regions["israelcentral"])
    client.post(f"{CERTIFICATIONS}{made.json()['id']}/revoke/")
    shown = client.get(f"{BINDINGS}{binding.pk}/").json()
    assert "certification of profile" in shown["workload_violation"] and shown["awaits_decision"]
    refused = client.post(f"{BINDINGS}{binding.pk}/migrations-applied/")
    assert refused.status_code == 409 and refused.json()["code"] == "workload_not_allowed"


@pytest.mark.django_db
def test_evidence_is_recorded_and_read_through_the_api_and_decides_the_verdict(
    tenant_a, store, regions
):
    rule("allow", geographies=["IL"])
    store.workload_class = "instance_query"
    store.save()
    on = another_profile()
    client = platform()
    body = {"store": store.slug, "tenant": tenant_a.slug, "profile": on.slug}
    refused = client.post(BINDINGS, {**body, "region": "israelcentral"}, format="json").json()
    assert refused["status"] == "refused"
    assert len(refused["workload_verdict"]["missing"]) == 6
    assert "benchmark instance_status on profile" in refused["status_reason"]
    for shape in gating.INSTANCE_FILTERS:
        made = client.post(
            f"{EVIDENCE}benchmarks/",
            {
                "provider": "postgresql",
                "query_shape": shape,
                "profile": on.slug,
                "figure": 2.5,
                "threshold": 5,
                "unit": "ms p95",
                "passed": True,
                "run_reference": "ci/bench/812",
            },
            format="json",
        )
        assert made.status_code == 201, made.content
    assert made.json()["recorded_by"] == "service:provisioning" and made.json()["recorded_at"]
    no_run = client.post(
        f"{EVIDENCE}contract-tests/",
        {"provider": "sqlite", "contract": "worker_retry", "passed": True, "run_reference": ""},
        format="json",
    )
    assert no_run.status_code == 400 and no_run.json()["code"] == "run_required"
    no_rollback = client.post(
        f"{EVIDENCE}policies/",
        {
            "profile": on.slug,
            "workload_class": "instance_query",
            "kind": "index_columns",
            "rollback_guidance": "",
            "run_reference": "review-3",
        },
        format="json",
    )
    assert no_rollback.json()["code"] == "rollback_guidance_required"
    listed = client.get(f"{EVIDENCE}benchmarks/", {"profile__slug": on.slug}).json()
    assert len(listed["results"]) == 6
    tenant_service = bearer(APIClient(), service_token(tenant=tenant_a, scopes=["stores:write"]))
    assert tenant_service.get(f"{EVIDENCE}benchmarks/").status_code == 200
    assert tenant_service.post(f"{EVIDENCE}contract-tests/", {}, format="json").status_code == 403
    allowed = client.post(BINDINGS, {**body, "region": "israelcentral"}, format="json").json()
    assert allowed["status"] == "requested"
    assert allowed["workload_verdict"]["decision"] == "conditional"
    assert "No physicalization policy" in " ".join(allowed["workload_verdict"]["reasons"])
    checklist = client.get(f"{STORES}{store.slug}/checklist/", {"profile": on.slug}).json()
    [steps] = checklist["results"]
    assert steps["persistence_class"] == "conditional_go"
    assert [(s["step"], s["key"], s["state"]) for s in steps["steps"]] == [
        (1, "keep_runtime", "done"),
        (2, "low_risk_first", "not_needed"),
        (3, "benchmark_fixtures", "done"),
        (4, "contract_tests", "not_needed"),
        (5, "physicalization", "preferred"),
        (6, "pilot", "missing"),
        (7, "hot_paths", "not_needed"),
    ]
    assert steps["steps"][4]["missing"][0].startswith("physicalization policy")


@pytest.mark.django_db
@pytest.mark.parametrize("path", [BINDINGS, "/api/v1/stores/residency/evaluate/"])
def test_a_tenant_token_cannot_tell_another_tenants_slug_from_an_unknown_one(
    path, tenant_a, tenant_b, store, profile, regions
):
    # Issue #19: `tenant_mismatch` for another tenant's slug but `does_not_exist` for a
    # slug nobody has let a tenant's token list the other tenants' slugs.
    rule("allow", geographies=["IL"])
    own = bearer(APIClient(), service_token(tenant=tenant_b, scopes=["stores:write"]))
    body = {"store": store.slug, "profile": profile.slug, "region": "israelcentral"}
    other = own.post(path, {**body, "tenant": tenant_a.slug}, format="json")
    unknown = own.post(path, {**body, "tenant": "no-such-tenant"}, format="json")
    assert other.status_code == unknown.status_code == 400
    assert other.json() == unknown.json()
    assert other.json()["code"] == "tenant_mismatch"
    with system_scope():
        assert not StoreBinding.objects.exists()


@pytest.mark.django_db
def test_a_read_only_token_may_ask_the_what_if_but_not_bind(tenant_a, store, profile, regions):
    # Issue #19: the evaluator's POST changes nothing, so a read scope may call it.
    rule("allow", geographies=["IL"])
    reader = bearer(APIClient(), service_token(scopes=["stores:read"], name="reader"))
    body = {"store": store.slug, "profile": profile.slug, "region": "israelcentral"}
    answer = reader.post(
        "/api/v1/stores/residency/evaluate/", {**body, "tenant": tenant_a.slug}, format="json"
    )
    assert answer.status_code == 200 and answer.json()["allowed"] is True
    refused = reader.post(BINDINGS, {**body, "tenant": tenant_a.slug}, format="json")
    assert refused.status_code == 403 and refused.json()["code"] == "missing_scope"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/stores/evidence/benchmarks/",
        "/api/v1/stores/evidence/contract-tests/",
        "/api/v1/stores/evidence/policies/",
    ],
)
def test_the_evidence_lists_cost_the_same_queries_for_more_rows(api, operator, profile, url):
    api.force_login(operator)
    assert_flat_query_count(
        lambda n: record_evidence_of_each_kind(profile, n), lambda: api.get(url)
    )
