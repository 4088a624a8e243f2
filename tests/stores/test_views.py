"""The stores console: bindings with history, the rule editor's preview, what-if."""

import pytest

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.stores import services
from apps.stores.models import ResidencyRule, StoreBinding
from tests.factories import member
from tests.query_counts import assert_flat_query_count, queries_for
from tests.stores.factories import (
    another_profile,
    certify,
    provisioned,
    record_evidence_of_each_kind,
    rule,
)

pytestmark = pytest.mark.django_db


def test_bindings_list_and_detail_show_status_verdicts_references_and_history(
    client, operator, tenant_a, store, profile, regions
):
    rule("allow", geographies=["IL"])
    binding = provisioned(tenant_a, store, profile, regions["israelcentral"])
    client.force_login(operator)
    listing = client.get("/stores/", {"status": "provisioned"})
    assert [b.pk for b in listing.context["object_list"]] == [binding.pk]
    page = client.get(f"/stores/bindings/{binding.pk}/").content.decode()
    assert f"local:{binding.pk}/key" in page and "Provisioned" in page
    assert "No residency rule" not in page and "allows region israelcentral" in page
    client.post(f"/stores/bindings/{binding.pk}/migrations-applied/")
    with system_scope():
        assert StoreBinding.objects.get(pk=binding.pk).status == "active"


def test_the_list_costs_the_same_queries_for_more_bindings(
    client, operator, tenant_a, tenant_b, store, profile, regions
):
    rule("allow", geographies=["IL"])
    client.force_login(operator)
    provisioned(tenant_a, store, profile, regions["israelcentral"])
    client.get("/stores/")  # the caller's first page fills the auth cache
    few = queries_for(lambda: client.get("/stores/"))
    provisioned(tenant_b, store, profile, regions["israelcentral"])
    assert queries_for(lambda: client.get("/stores/")) == few


def test_the_rule_editor_previews_without_saving_then_saves_and_flags(
    client, operator, tenant_a, store, profile, regions
):
    allow = rule("allow", geographies=["IL", "EU"])
    binding = provisioned(tenant_a, store, profile, regions["westeurope"])
    client.force_login(operator)
    form = {"effect": "allow", "geographies": "IL"}
    preview = client.post(f"/stores/rules/{allow.pk}/", {**form, "preview": "1"})
    assert [b.pk for b, _ in preview.context["affected"]] == [binding.pk]
    with system_scope():
        assert ResidencyRule.objects.get(pk=allow.pk).geographies == ["IL", "EU"]
    saved = client.post(f"/stores/rules/{allow.pk}/", {**form, "save": "1"})
    assert saved.status_code == 302
    with system_scope():
        flagged = StoreBinding.objects.get(pk=binding.pk)
    assert flagged.status == "provisioned" and "westeurope" in flagged.violation
    assert "Residency violation" in client.get(flagged.get_absolute_url()).content.decode()


def test_an_exception_needs_a_reason(client, operator, tenant_a):
    client.force_login(operator)
    page = client.post(
        "/stores/rules/new/",
        {"effect": "allow", "geographies": "US", "tenant": tenant_a.slug, "is_exception": "on"},
    )
    assert page.status_code == 200 and "needs a reason" in page.content.decode()
    with system_scope():
        assert not ResidencyRule.objects.exists()


def test_what_if_explains_and_only_managers_act(client, tenant_a, store, profile, regions):
    rule("allow", geographies=["IL"])
    viewer = member(tenant_a, username="viewer")
    client.force_login(viewer)
    answer = client.get(
        "/stores/what-if/",
        {"tenant": tenant_a.slug, "store": store.slug, "profile": profile.slug, "region": "eastus"},
    )
    assert answer.context["verdict"]["allowed"] is False
    assert "allows only other regions, not eastus" in answer.content.decode()
    binding = provisioned(tenant_a, store, profile, regions["israelcentral"])
    assert client.post(f"/stores/bindings/{binding.pk}/retire/").status_code == 403
    assert client.get("/stores/rules/new/").status_code == 403


def test_the_rule_and_certification_lists_cost_the_same_queries_for_more_rows(
    client, operator, tenant_a, regions
):
    client.force_login(operator)

    def add_rules(n):
        for _ in range(n):
            rule("allow", tenant=tenant_a, regions=list(regions.values()), reason="more")

    def add_certifications(n):
        for _ in range(n):
            more = another_profile()
            certify(more, "queue")

    assert_flat_query_count(add_rules, lambda: client.get("/stores/rules/"))
    assert_flat_query_count(add_certifications, lambda: client.get("/stores/certifications/"))


def test_each_list_filters_with_its_models_filterset(
    client, operator, tenant_a, store, profile, regions
):
    rule("allow", geographies=["IL"])
    mine = rule("deny", tenant=tenant_a, geographies=["EU"], reason="a's own")
    binding = provisioned(tenant_a, store, profile, regions["israelcentral"])
    certify(profile, "queue")
    client.force_login(operator)
    flagged = client.get("/stores/", {"flagged": "false", "store": store.slug})
    assert [b.pk for b in flagged.context["object_list"]] == [binding.pk]
    assert not client.get("/stores/", {"flagged": "true"}).context["object_list"]
    denies = client.get("/stores/rules/", {"effect": "deny"}).context["object_list"]
    assert [r.pk for r in denies] == [mine.pk]
    queues = client.get("/stores/certifications/", {"workload_class": "queue"})
    assert [c.profile_id for c in queues.context["object_list"]] == [profile.pk]


def test_a_flagged_binding_waits_on_the_dashboard_and_the_operator_grants_an_exception(
    client, operator, admin_a, tenant_a, store, profile, regions
):
    allow = rule("allow", geographies=["EU"])
    binding = provisioned(tenant_a, store, profile, regions["westeurope"])
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["IL"], regions=[])
    client.force_login(operator)
    dashboard = client.get("/").content.decode()
    assert (
        "Store bindings wait on a decision" in dashboard and binding.get_absolute_url() in dashboard
    )
    page = client.get(binding.get_absolute_url()).content.decode()
    assert "Grant a residency exception" in page and "cannot be provisioned" in page
    act = f"/stores/bindings/{binding.pk}/grant-exception/"
    missing = client.post(act, {"reason": "", "expires_at": "2099-01-01T00:00"}, follow=True)
    assert "needs a reason" in missing.content.decode()
    client.post(act, {"reason": "DPA addendum", "expires_at": "2099-01-01T00:00"})
    with system_scope():
        excepted = StoreBinding.objects.get(pk=binding.pk)
    assert excepted.exception_in_force() and excepted.violation == ""
    page = client.get(binding.get_absolute_url()).content.decode()
    assert "Residency exception" in page and "in force" in page and "DPA addendum" in page
    assert "Store bindings wait on a decision" not in client.get("/").content.decode()
    # A tenant admin may retire, but an exception is an operator's decision.
    client.force_login(admin_a)
    assert client.post(act, {"reason": "x", "expires_at": "2099-01-01T00:00"}).status_code == 403


def test_operators_record_and_read_evidence_in_the_console(client, operator, admin_a, profile):
    client.force_login(operator)
    listing = client.get("/stores/evidence/benchmarks/").content.decode()
    assert "Record a benchmark" in listing
    recorded = client.post(
        "/stores/evidence/benchmarks/new/",
        {
            "provider": "postgresql",
            "query_shape": "instance_status",
            "profile": profile.pk,
            "figure": "2.5",
            "threshold": "5",
            "unit": "ms p95",
            "passed": "on",
            "run_reference": "ci/bench/1",
        },
    )
    assert recorded.status_code == 302, recorded.content
    page = client.get("/stores/evidence/benchmarks/").content.decode()
    assert "ci/bench/1" in page and "Instances by status" in page
    refused = client.post(
        "/stores/evidence/policies/new/",
        {
            "profile": profile.pk,
            "workload_class": "hot_lookup",
            "kind": "native_indexes",
            "rollback_guidance": "Drop the indexes.",
            "run_reference": "",
        },
    )
    assert refused.status_code == 200  # the form again, with the refusal
    client.post(
        "/stores/evidence/contract-tests/new/",
        {"provider": "sqlite", "contract": "worker_retry", "run_reference": "ci/ct/4"},
    )
    assert "ci/ct/4" in client.get("/stores/evidence/contract-tests/").content.decode()
    assert client.get("/stores/evidence/policies/").status_code == 200
    client.force_login(admin_a)
    assert client.get("/stores/evidence/benchmarks/").status_code == 200
    assert client.get("/stores/evidence/benchmarks/new/").status_code == 403


def test_the_evidence_lists_cost_the_same_queries_for_more_rows(client, operator, profile):
    client.force_login(operator)

    def add(n):
        for i in range(n):
            services.benchmark_record(
                actor=SYSTEM_ACTOR,
                provider="postgresql",
                query_shape="instance_status",
                profile=profile,
                figure=1,
                threshold=2,
                passed=True,
                run_reference=f"r{i}",
            )

    assert_flat_query_count(add, lambda: client.get("/stores/evidence/benchmarks/"))


@pytest.mark.parametrize("url", ["/stores/evidence/contract-tests/", "/stores/evidence/policies/"])
def test_the_other_evidence_lists_cost_the_same_queries_for_more_rows(
    client, operator, profile, url
):
    client.force_login(operator)
    assert_flat_query_count(
        lambda n: record_evidence_of_each_kind(profile, n), lambda: client.get(url)
    )


def test_the_binding_page_shows_the_migration_checklist(
    client, operator, tenant_a, store, profile, regions
):
    rule("allow", geographies=["IL"])
    binding = provisioned(tenant_a, store, profile, regions["israelcentral"])
    client.force_login(operator)
    page = client.get(binding.get_absolute_url()).content.decode()
    assert 'id="migration-checklist"' in page and "Persistence class <strong>go" in page
    assert page.count("<tr><td>") >= 7
