"""Workload gating: the persistence decision's four classes, each with complete, partial
and missing evidence, and the verdict naming exactly what is missing.

Issue #16 changed what this pins: hot lookups (bookmarks, triggers) were conditional on
one free-text certificate and are now no-go until the benchmark gate passes; queues and
append logs need recorded throughput benchmarks as well as the certification; and the
conditional-go class (workflow instances and query surfaces) is new.
"""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.stores import gating
from apps.stores.gating import (
    CONDITIONAL,
    GO,
    NO_GO,
    Evidence,
    evaluate_workload,
)
from apps.stores.models import (
    BenchmarkResult,
    ContractTestResult,
    PhysicalizationPolicy,
    ProfileCertification,
    StoreProfile,
)

SHAPES = [choice for choice, _ in StoreProfile.Shape.choices]
CERTIFICATE = ProfileCertification(pk=9, certified_by="perf-team", benchmark_reference="BM-42")
T0 = timezone.now()


def profile(shape="dedicated_tables", retention=True, engine="postgresql"):
    return StoreProfile(
        pk=1,
        slug=f"p-{shape}",
        engine=engine,
        shape=shape,
        provides_retention_cleanup=retention,
    )


def bench(shape, provider, on=None, passed=True, at=T0):
    return BenchmarkResult(
        pk=hash((shape, provider, at)) % 10_000,
        query_shape=shape,
        provider=provider,
        profile=on,
        figure=3 if passed else 12,
        threshold=5,
        unit="ms p95",
        passed=passed,
        recorded_by="perf-team",
        recorded_at=at,
        run_reference="run-1",
    )


def complete(workload, on, *, skip=(), failing=(), policy=True) -> Evidence:
    benchmarks, contracts, policies = [], [], []
    if workload == "instance_query":
        benchmarks = [bench(s, on.engine, on) for s in gating.INSTANCE_FILTERS]
    elif workload == "hot_lookup":
        benchmarks = [bench(s, p) for p in gating.PROVIDERS for s in gating.HOT_LOOKUP_SHAPES]
        contracts = [
            ContractTestResult(
                pk=n, contract=c, provider=p, passed=c not in failing, recorded_at=T0
            )
            for n, (c, p) in enumerate((c, p) for p in gating.PROVIDERS for c in gating.CONTRACTS)
        ]
    elif workload in ("queue", "append_log"):
        benchmarks = [bench(s, on.engine, on) for s in gating.SPECIALIZED_SHAPES[workload]]
    benchmarks = [
        bench(b.query_shape, b.provider, b.profile, passed=b.query_shape not in failing)
        for b in benchmarks
        if b.query_shape not in skip
    ]
    contracts = [c for c in contracts if c.contract not in skip]
    if policy:
        policies = [
            PhysicalizationPolicy(
                pk=3,
                profile=on,
                workload_class=workload,
                kind="dedicated_tables",
                rollback_guidance="Drop the tables.",
                recorded_at=T0,
            )
        ]
    return Evidence.of(benchmarks, contracts, policies)


# --------------------------------------------------------------------------- go


@pytest.mark.parametrize("shape", SHAPES)
def test_catalog_stores_are_go_on_any_profile_without_evidence(shape):
    verdict = evaluate_workload("catalog", profile(shape))
    assert verdict.decision == GO and verdict.persistence_class == "go"
    assert verdict.missing == () and verdict.evidence == ""


# --------------------------------------------------------------------------- conditional go


def test_instance_queries_are_conditional_go_with_benchmarks_and_a_policy():
    on = profile()
    verdict = evaluate_workload("instance_query", on, evidence=complete("instance_query", on))
    assert verdict.decision == CONDITIONAL and verdict.allows
    assert verdict.persistence_class == "conditional_go"
    assert verdict.missing == () and "policy:3" in verdict.relied_on
    assert len([r for r in verdict.relied_on if r.startswith("benchmark:")]) == 6


def test_instance_queries_without_the_policy_are_allowed_and_the_verdict_says_so():
    on = profile()
    evidence = complete("instance_query", on, policy=False)
    verdict = evaluate_workload("instance_query", on, evidence=evidence)
    assert verdict.decision == CONDITIONAL
    assert "No physicalization policy for these filters is recorded." in verdict.reasons
    assert verdict.missing == (
        "physicalization policy for instance_query on profile p-dedicated_tables: "
        "none recorded (preferred)",
    )


def test_instance_queries_with_partial_benchmarks_are_refused_naming_each_gap():
    on = profile()
    evidence = complete(
        "instance_query", on, skip={"instance_version"}, failing={"instance_correlation_id"}
    )
    verdict = evaluate_workload("instance_query", on, evidence=evidence)
    assert verdict.decision == NO_GO
    assert verdict.missing == (
        "benchmark instance_version on profile p-dedicated_tables: none recorded",
        "benchmark instance_correlation_id on profile p-dedicated_tables: failed "
        "(12 ms p95 against threshold 5 ms p95, run run-1)",
    )
    assert verdict.reasons[-1].startswith("Missing: benchmark instance_version")


def test_instance_queries_without_evidence_miss_all_six_filters():
    verdict = evaluate_workload("instance_query", profile())
    assert verdict.decision == NO_GO and len(verdict.missing) == 6


def test_benchmarks_of_another_profile_or_provider_do_not_count():
    on, other = profile(), StoreProfile(pk=2, slug="other", engine="postgresql")
    verdict = evaluate_workload("instance_query", on, evidence=complete("instance_query", other))
    assert verdict.decision == NO_GO and len(verdict.missing) == 6


def test_the_latest_benchmark_decides():
    on = profile()
    evidence = complete("instance_query", on)
    later = bench("instance_status", "postgresql", on, passed=False, at=T0 + timedelta(hours=1))
    superseded = Evidence.of([*evidence.benchmarks.values(), later], (), evidence.policies.values())
    verdict = evaluate_workload("instance_query", on, evidence=superseded)
    assert verdict.decision == NO_GO
    assert verdict.missing[0].startswith("benchmark instance_status on profile")


# --------------------------------------------------------------------------- benchmark-gated


def test_hot_lookups_are_go_only_when_the_whole_gate_passed():
    on = profile()
    verdict = evaluate_workload("hot_lookup", on, CERTIFICATE, complete("hot_lookup", on))
    assert verdict.decision == GO and verdict.persistence_class == "no_go_benchmark_gated"
    assert verdict.missing == () and verdict.certification_id == 9
    assert verdict.evidence == "BM-42"


def test_hot_lookups_on_a_certificate_alone_are_no_go_naming_every_missing_record():
    verdict = evaluate_workload("hot_lookup", profile(), CERTIFICATE)
    assert verdict.decision == NO_GO
    # 7 shapes and 6 contracts on each of the 4 providers, and the policy.
    assert len(verdict.missing) == 7 * 4 + 6 * 4 + 1
    assert "benchmark bookmark_hash on sqlite: none recorded" in verdict.missing
    assert "contract test distributed_lock on mongodb: none recorded" in verdict.missing


def test_hot_lookups_with_partial_evidence_name_exactly_the_gaps():
    on = profile()
    evidence = complete(
        "hot_lookup",
        on,
        skip={"trigger_tenant_id"},
        failing={"worker_retry"},
        policy=False,
    )
    verdict = evaluate_workload("hot_lookup", on, None, evidence)
    assert verdict.decision == NO_GO
    expected = {
        "certification of profile p-dedicated_tables for hot_lookup: none in force",
        "physicalization policy for hot_lookup on profile p-dedicated_tables: none recorded",
    }
    expected |= {f"benchmark trigger_tenant_id on {p}: none recorded" for p in gating.PROVIDERS}
    expected |= {f"contract test worker_retry on {p}: failed (run )" for p in gating.PROVIDERS}
    assert set(verdict.missing) == expected


def test_a_policy_without_rollback_guidance_does_not_count():
    on = profile()
    evidence = complete("hot_lookup", on)
    [policy] = evidence.policies.values()
    policy.rollback_guidance = " "
    verdict = evaluate_workload("hot_lookup", on, CERTIFICATE, evidence)
    assert verdict.missing == (
        "physicalization policy for hot_lookup on profile p-dedicated_tables: no rollback guidance",
    )


# --------------------------------------------------------------------------- specialized


@pytest.mark.parametrize("workload", ["queue", "append_log"])
def test_queues_and_logs_are_go_on_a_certified_specialised_profile_with_benchmarks(workload):
    on = profile()
    verdict = evaluate_workload(workload, on, CERTIFICATE, complete(workload, on))
    assert verdict.decision == GO and verdict.persistence_class == "specialized_only"
    assert verdict.evidence == "BM-42" and verdict.missing == ()


@pytest.mark.parametrize(
    ("workload", "gap"), [("queue", "queue_dead_letter"), ("append_log", "log_append")]
)
def test_queues_and_logs_with_partial_benchmarks_name_the_gap(workload, gap):
    on = profile()
    evidence = complete(workload, on, skip={gap})
    verdict = evaluate_workload(workload, on, CERTIFICATE, evidence)
    assert verdict.decision == NO_GO
    assert verdict.missing == (f"benchmark {gap} on profile p-dedicated_tables: none recorded",)


@pytest.mark.parametrize("workload", ["queue", "append_log"])
def test_queues_and_logs_without_evidence_on_portable_documents_miss_everything(workload):
    on = profile("portable_documents", retention=False)
    verdict = evaluate_workload(workload, on)
    assert verdict.decision == NO_GO
    assert verdict.missing[0] == (
        "a specialised profile (p-portable_documents is portable documents)"
    )
    assert "retention cleanup on profile p-portable_documents" in verdict.missing
    assert any(m.startswith("certification of profile") for m in verdict.missing)
    assert len(verdict.missing) == 3 + len(gating.SPECIALIZED_SHAPES[workload])


@pytest.mark.parametrize("workload", gating.PERSISTENCE_CLASS)
@pytest.mark.parametrize("shape", SHAPES)
def test_every_workload_and_shape_has_an_explained_verdict(workload, shape):
    verdict = evaluate_workload(workload, profile(shape))
    assert verdict.reasons and all(reason.endswith(".") for reason in verdict.reasons)
    assert verdict.allows == (workload == "catalog")
    assert verdict.as_dict()["missing"] == list(verdict.missing)
