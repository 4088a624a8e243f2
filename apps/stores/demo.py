"""The stores' demo data (apps.core.setup, `steward_setup --demo`): a store, two
profiles, residency rules and one binding (a worker provisions it through the local
secret broker once `make run` is up)."""

from __future__ import annotations

from apps.core.context import SYSTEM_ACTOR
from apps.registry.services import service_ensure
from apps.stores import gating, services
from apps.stores.models import Store, StoreProfile
from apps.tenancy import selectors as tenancy
from apps.tenancy.demo import demo_tenant
from apps.tenancy.services import catalog_create


def install_demo_data(report) -> list[str]:
    actor, acme = SYSTEM_ACTOR, demo_tenant()
    data_classes = tenancy.data_class_list()
    knowledge = service_ensure(
        actor=actor, name="knowledge", description="Knowledge service (demo)"
    )
    store = catalog_create(
        actor=actor,
        model=Store,
        slug="knowledge-sql",
        name="Knowledge SQL",
        owning_service=knowledge,
        data_class=data_classes.get(slug="customer-content"),
        category=Store.Category.AUTHORITATIVE,
        workload_class="catalog",
    )
    dedicated = catalog_create(
        actor=actor,
        model=StoreProfile,
        slug="postgres-dedicated",
        name="PostgreSQL, dedicated tables",
        engine="postgresql",
        shape="dedicated_tables",
        provides_retention_cleanup=True,
    )
    catalog_create(
        actor=actor,
        model=StoreProfile,
        slug="mongo-documents",
        name="MongoDB, portable documents",
        engine="mongodb",
        shape="portable_documents",
    )
    services.rule_create(actor=actor, effect="allow", geographies=["IL", "EU"], reason="default")
    services.rule_create(
        actor=actor,
        effect="deny",
        data_class=data_classes.get(slug="personal"),
        geographies=["EU"],
        reason="personal data of Israeli tenants stays in Israel (demo)",
    )
    services.binding_set(
        actor=actor,
        tenant=acme,
        store=store,
        profile=dedicated,
        region=tenancy.region_list().get(slug="israelcentral"),
    )
    _install_demo_evidence(actor, dedicated)
    return ["a store bound for acme in israelcentral"]


def _install_demo_evidence(actor, profile) -> None:
    """A little workload evidence, so the evidence pages and the checklist show records:
    the common instance filters benchmarked on the dedicated profile, one contract
    test, and its physicalization policy."""
    for shape in gating.INSTANCE_FILTERS:
        services.benchmark_record(
            actor=actor,
            provider=profile.engine,
            query_shape=shape,
            profile=profile,
            figure=2.0,
            threshold=10.0,
            unit="ms p95",
            passed=True,
            run_reference="demo: python -m bench stores --quick",
        )
    services.contract_test_record(
        actor=actor,
        provider=profile.engine,
        contract="optimistic_concurrency",
        passed=True,
        run_reference="demo: provider contract suite",
    )
    services.policy_record(
        actor=actor,
        profile=profile,
        workload_class="instance_query",
        kind="index_columns",
        description="Typed index columns for status, sub-status, definition id, version, "
        "correlation id and updated timestamp.",
        rollback_guidance="Drop the index columns; queries fall back to the documents.",
        run_reference="demo: design review",
    )
