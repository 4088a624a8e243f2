"""Issue 37 §6: the migration checklist follows the persistence decision's seven steps
as it names them; step 6 is a recorded pilot; a runtime hot path stays no-go until step
7's evidence covers every supported provider."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import ValidationFailed
from apps.stores import gating, selectors, services
from apps.stores.models import Store
from tests.conftest import bearer
from tests.factories import service_token
from tests.query_counts import assert_flat_query_count
from tests.stores.factories import another_profile, bind, certify, record_evidence, rule

pytestmark = pytest.mark.django_db

THE_SEVEN_STEPS = [
    "Keep the current runtime persistence intact",
    "Add vNext-backed stores only for low-risk module and management data",
    "Add benchmark fixtures for workflow runtime query shapes",
    "Add provider contract tests for locking, queues and append-heavy logs",
    "Introduce physicalization policies for workflow instance and bookmark indexes",
    "Pilot one non-critical runtime-adjacent store",
    "Migrate runtime hot paths only after benchmarks and contract tests pass across the "
    "supported providers (SQLite, SQL Server, PostgreSQL, MongoDB)",
]


def a_store(like, workload):
    return Store.objects.create(
        slug=f"{workload.replace('_', '-')}-{uuid.uuid4().hex[:6]}",
        name=workload,
        owning_service=like.owning_service,
        data_class=like.data_class,
        category="authoritative",
        workload_class=workload,
    )


def pilot(store, profile, outcome="succeeded", **extra):
    return services.pilot_record(
        actor=SYSTEM_ACTOR,
        store=store,
        profile=profile,
        outcome=outcome,
        started_at=timezone.now() - timedelta(days=14),
        run_reference="pilot-1",
        **extra,
    )


def states(checklist):
    return {s["key"]: s["state"] for s in checklist["steps"]}


def test_the_checklist_is_the_seven_named_steps(store, profile):
    checklist = selectors.migration_checklist(store, profile)
    assert [s["title"] for s in checklist["steps"]] == THE_SEVEN_STEPS
    assert [s["step"] for s in checklist["steps"]] == list(range(1, 8))


def test_module_data_is_the_low_risk_first_step_and_needs_no_pilot(store, profile):
    checklist = selectors.migration_checklist(store, profile)  # a catalog store
    assert states(checklist) == {
        "keep_runtime": "done",
        "low_risk_first": "done",
        "benchmark_fixtures": "not_needed",
        "contract_tests": "not_needed",
        "physicalization": "not_needed",
        "pilot": "not_needed",
        "hot_paths": "not_needed",
    }
    assert checklist["verdict"] == "go" and checklist["hot_path"] is False


def test_a_hot_path_stays_no_go_until_a_pilot_succeeded_on_its_profile(store, profile):
    hot = a_store(store, "hot_lookup")
    record_evidence(profile, "hot_lookup")
    certify(profile, "hot_lookup")
    checklist = selectors.migration_checklist(hot, profile)
    assert checklist["decision"] == "go"  # the workload gate alone would allow it
    assert states(checklist)["hot_paths"] == "done"
    assert all(p["covered"] for p in checklist["providers"].values())
    assert states(checklist)["pilot"] == "missing" and checklist["verdict"] == "no_go"

    adjacent = a_store(store, "instance_query")
    pilot(adjacent, profile, "running", ended_at=None)
    checklist = selectors.migration_checklist(hot, profile)
    assert states(checklist)["pilot"] == "missing" and checklist["verdict"] == "no_go"
    assert "still running" in checklist["steps"][5]["missing"][0]

    pilot(adjacent, profile, "succeeded")
    checklist = selectors.migration_checklist(hot, profile)
    assert states(checklist)["pilot"] == "done" and checklist["verdict"] == "go"
    assert checklist["pilot"]["store"] == adjacent.slug
    assert checklist["pilot"]["outcome"] == "succeeded" and checklist["pilot"]["ended_at"]


def test_a_hot_path_stays_no_go_while_one_provider_lacks_step_7s_evidence(store, profile):
    hot = a_store(store, "hot_lookup")
    record_evidence(profile, "hot_lookup")
    certify(profile, "hot_lookup")
    pilot(a_store(store, "instance_query"), profile)
    services.contract_test_record(
        actor=SYSTEM_ACTOR,
        provider="mongodb",
        contract="distributed_lock",
        passed=False,
        run_reference="contracts-run-2",
    )
    checklist = selectors.migration_checklist(hot, profile)
    assert checklist["verdict"] == "no_go"
    assert {p for p, c in checklist["providers"].items() if not c["covered"]} == {"mongodb"}
    assert states(checklist)["contract_tests"] == "missing"
    assert states(checklist)["hot_paths"] == "missing"
    assert "mongodb" in " ".join(checklist["reasons"])


def test_a_queue_allowed_by_its_gate_on_one_provider_is_still_no_go_as_a_hot_path(store):
    specialised = another_profile(provides_retention_cleanup=True)
    queue = a_store(store, "queue")
    record_evidence(specialised, "queue", policy=False)
    certify(specialised, "queue")
    pilot(a_store(store, "instance_query"), specialised)
    for contract in gating.CONTRACTS:  # contract tests pass on the profile's provider alone
        services.contract_test_record(
            actor=SYSTEM_ACTOR,
            provider="postgresql",
            contract=contract,
            passed=True,
            run_reference="contracts-pg",
        )
    checklist = selectors.migration_checklist(queue, specialised)
    assert checklist["decision"] == "go"  # the gate asks benchmarks on the profile only
    assert checklist["verdict"] == "no_go"
    uncovered = {p for p, c in checklist["providers"].items() if not c["covered"]}
    assert uncovered == {"sqlite", "sqlserver", "mongodb"}
    assert states(checklist)["hot_paths"] == "missing"


def test_a_runtime_adjacent_store_needs_the_pilot_and_prefers_the_policy(store, profile):
    adjacent = a_store(store, "instance_query")
    record_evidence(profile, "instance_query", policy=False)
    checklist = selectors.migration_checklist(adjacent, profile)
    assert states(checklist) == {
        "keep_runtime": "done",
        "low_risk_first": "not_needed",
        "benchmark_fixtures": "done",
        "contract_tests": "not_needed",
        "physicalization": "preferred",
        "pilot": "missing",
        "hot_paths": "not_needed",
    }
    pilot(adjacent, profile, "failed")
    checklist = selectors.migration_checklist(adjacent, profile)
    assert states(checklist)["pilot"] == "missing" and checklist["pilot"]["outcome"] == "failed"


@pytest.mark.parametrize("workload", ["catalog", "hot_lookup", "queue"])
def test_a_pilot_is_of_a_non_critical_runtime_adjacent_store(store, profile, workload):
    with pytest.raises(ValidationFailed) as refused:
        pilot(a_store(store, workload), profile)
    assert refused.value.code == "pilot_not_runtime_adjacent"


def test_a_pilot_ends_after_it_starts_and_a_running_one_has_not_ended(store, profile):
    adjacent = a_store(store, "instance_query")
    with pytest.raises(ValidationFailed) as refused:
        pilot(adjacent, profile, ended_at=timezone.now() - timedelta(days=30))
    assert refused.value.code == "invalid_pilot_period"
    with pytest.raises(ValidationFailed) as refused:
        pilot(adjacent, profile, "running", ended_at=timezone.now())
    assert refused.value.code == "invalid_pilot_period"


def test_pilots_are_recorded_through_the_api_and_shown_in_the_checklist(
    store, profile, client, operator
):
    adjacent = a_store(store, "instance_query")
    runs = bearer(APIClient(), service_token(scopes=["stores:write"], name="ci"))
    body = {
        "store": adjacent.slug,
        "profile": profile.slug,
        "outcome": "succeeded",
        "started_at": "2026-01-05T09:00:00Z",
        "ended_at": "2026-02-05T09:00:00Z",
        "run_reference": "pilot-2026-01",
    }
    created = runs.post("/api/v1/stores/evidence/pilots/", body, format="json")
    assert created.status_code == 201, created.content
    assert created.json()["recorded_by"] and created.json()["store"] == adjacent.slug
    refused = runs.post(
        "/api/v1/stores/evidence/pilots/", {**body, "store": store.slug}, format="json"
    )
    assert refused.status_code == 400
    assert refused["Content-Type"].startswith("application/problem+json")
    assert refused.json()["code"] == "pilot_not_runtime_adjacent"
    no_run = runs.post(
        "/api/v1/stores/evidence/pilots/", {**body, "run_reference": ""}, format="json"
    )
    assert no_run.status_code == 400 and no_run.json()["code"] == "run_required"

    listed = runs.get("/api/v1/stores/evidence/pilots/", {"outcome": "succeeded"}).json()
    assert [p["run_reference"] for p in listed["results"]] == ["pilot-2026-01"]
    checklist = runs.get(
        f"/api/v1/stores/stores/{adjacent.slug}/checklist/", {"profile": profile.slug}
    ).json()
    [steps] = checklist["results"]
    assert steps["pilot"]["run_reference"] == "pilot-2026-01"
    assert steps["steps"][5]["state"] == "done"

    client.force_login(operator)
    page = client.get("/stores/evidence/pilots/").content.decode()
    assert "pilot-2026-01" in page and "Record a pilot" in page


def test_the_pilot_lists_cost_the_same_queries_for_more_pilots(store, profile, client, operator):
    adjacent = a_store(store, "instance_query")

    def add_pilots(n):
        for _ in range(n):
            pilot(adjacent, profile)

    api = APIClient()
    api.force_login(operator)
    assert_flat_query_count(add_pilots, lambda: api.get("/api/v1/stores/evidence/pilots/"))
    client.force_login(operator)
    assert_flat_query_count(add_pilots, lambda: client.get("/stores/evidence/pilots/"))


def test_the_binding_page_shows_the_strategys_verdict_and_the_pilot(
    tenant_a, store, profile, regions, client, operator
):
    adjacent = a_store(store, "instance_query")
    record_evidence(profile, "instance_query")
    rule("allow", geographies=["IL"])
    binding = bind(tenant_a, adjacent, profile, regions["israelcentral"])
    pilot(adjacent, profile, "failed")
    client.force_login(operator)
    page = client.get(binding.get_absolute_url()).content.decode()
    assert 'id="migration-verdict">conditional<' in page
    assert 'id="migration-pilot"' in page and "<strong>failed</strong>" in page
    assert "Pilot one non-critical runtime-adjacent store" in page
