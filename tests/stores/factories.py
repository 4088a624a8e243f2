"""Stores' test data, made through the stores services as a caller would make it."""

import uuid

from apps.core.context import SYSTEM_ACTOR
from apps.stores import services
from apps.stores.models import ProfileCertification, Store, StoreProfile


def stores_like(store, n):
    """`n` more stores like `store` (its owner, data and workload)."""
    return [
        Store.objects.create(
            slug=f"{store.slug}-{uuid.uuid4().hex[:8]}",
            name="More",
            owning_service=store.owning_service,
            data_class=store.data_class,
            category=store.category,
            workload_class=store.workload_class,
        )
        for _ in range(n)
    ]


def another_profile(**fields):
    return StoreProfile.objects.create(
        slug=f"p-{uuid.uuid4().hex[:8]}",
        name="More",
        **{"engine": "postgresql", "shape": "dedicated_tables", **fields},
    )


def certify(profile, workload, by="perf-team"):
    return ProfileCertification.objects.create(
        profile=profile, workload_class=workload, certified_by=by, benchmark_reference="BM-1"
    )


def rule(effect, *, regions=(), geographies=(), tenant=None, data_class=None, **extra):
    return services.rule_create(
        actor=SYSTEM_ACTOR,
        effect=effect,
        tenant=tenant,
        data_class=data_class,
        regions=list(regions),
        geographies=list(geographies),
        **extra,
    )


def bind(tenant, store, profile, region):
    return services.binding_set(
        actor=SYSTEM_ACTOR, tenant=tenant, store=store, profile=profile, region=region
    )


def provisioned(tenant, store, profile, region):
    binding = bind(tenant, store, profile, region)
    services.binding_provision(binding_id=binding.pk)
    return binding


def record_evidence(profile, workload, *, skip=(), failing=(), policy=True, by="perf-team"):
    """The complete evidence the persistence decision asks of `workload` on `profile`,
    but for the benchmark shapes or contracts in `skip` (left unrecorded) and those in
    `failing` (recorded as failed)."""
    from apps.stores import gating

    def bench(shape, provider, on=None):
        if shape in skip:
            return
        services.benchmark_record(
            actor=SYSTEM_ACTOR,
            provider=provider,
            query_shape=shape,
            profile=on,
            figure=12.0 if shape in failing else 3.0,
            threshold=5.0,
            unit="ms p95",
            passed=shape not in failing,
            run_reference=f"bench-run-{shape}",
        )

    if workload == "instance_query":
        for shape in gating.INSTANCE_FILTERS:
            bench(shape, profile.engine, profile)
    elif workload == "hot_lookup":
        for provider in gating.PROVIDERS:
            for shape in gating.HOT_LOOKUP_SHAPES:
                bench(shape, provider)
            for contract in gating.CONTRACTS:
                if contract not in skip:
                    services.contract_test_record(
                        actor=SYSTEM_ACTOR,
                        provider=provider,
                        contract=contract,
                        passed=contract not in failing,
                        run_reference="contracts-run-1",
                    )
    elif workload in ("queue", "append_log"):
        for shape in gating.SPECIALIZED_SHAPES[workload]:
            bench(shape, profile.engine, profile)
    if policy and workload != "catalog":
        services.policy_record(
            actor=SYSTEM_ACTOR,
            profile=profile,
            workload_class=workload,
            kind="dedicated_tables",
            rollback_guidance="Drop the dedicated tables; the documents remain the source.",
            run_reference="policy-review-1",
        )


def record_evidence_of_each_kind(profile, n):
    """n benchmark results, contract-test results and physicalization policies."""
    for i in range(n):
        services.benchmark_record(
            actor=SYSTEM_ACTOR,
            provider="postgresql",
            query_shape="instance_status",
            profile=profile,
            figure=1,
            threshold=2,
            passed=True,
            run_reference=f"b{i}",
        )
        services.contract_test_record(
            actor=SYSTEM_ACTOR,
            provider="mongodb",
            contract="worker_retry",
            passed=True,
            run_reference=f"c{i}",
        )
        services.policy_record(
            actor=SYSTEM_ACTOR,
            profile=profile,
            workload_class="instance_query",
            kind="native_indexes",
            rollback_guidance="drop the indexes",
            run_reference=f"p{i}",
        )
