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
