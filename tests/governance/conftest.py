import pytest

from apps.core.context import Actor
from apps.core.scope import system_scope, tenant_scope
from apps.governance import services, work
from apps.governance.models import GovernanceTask
from apps.registry.models import Service
from apps.stores.models import Store, StoreBinding, StoreProfile
from apps.tenancy.models import DataClass
from tests.factories import member

# (owner service, store slug, category): one store of each deletion phase.
OWNED = [
    ("search", "search-index", Store.Category.DERIVED),
    ("orders", "orders-sql", Store.Category.AUTHORITATIVE),
    ("audit-log", "audit-archive", Store.Category.AUDIT),
]


@pytest.fixture(autouse=True)
def _governance_settings(settings, tmp_path):
    settings.STEWARD_EXPORT_DIR = str(tmp_path / "exports")
    settings.STEWARD_SECRET_BROKER_DIR = str(tmp_path / "secrets")


@pytest.fixture
def bound(tenant_a, region):
    """tenant_a with an active binding of a store of each category."""
    personal = DataClass.objects.get_or_create(slug="personal", defaults={"name": "Personal"})[0]
    profile = StoreProfile.objects.create(
        slug="pg", name="PostgreSQL", engine="postgresql", shape="dedicated_tables"
    )
    stores = {}
    for owner, slug, category in OWNED:
        stores[owner] = Store.objects.create(
            slug=slug,
            name=slug,
            owning_service=Service.objects.get_or_create(name=owner)[0],
            data_class=personal,
            category=category,
            workload_class="catalog",
        )
        with tenant_scope(tenant_a):
            StoreBinding.objects.create(
                tenant=tenant_a,
                store=stores[owner],
                profile=profile,
                region=region,
                status=StoreBinding.Status.ACTIVE,
            )
    return stores


def approved(tenant, kind="deletion"):
    """An order requested by one admin and approved by another (non-production)."""
    requester = Actor(
        user=member(tenant, role="admin", username=f"req-{kind}", email="req@example.com")
    )
    order = services.order_request(actor=requester, tenant=tenant, kind=kind, reason="offboarding")
    approver = Actor(user=member(tenant, role="admin", username=f"appr-{kind}"))
    return services.order_decide(actor=approver, order=order, approve=True)


def open_tasks(order, phase=None):
    with system_scope():
        tasks = GovernanceTask.objects.filter(order=order).order_by("owner")
        if phase is not None:
            tasks = tasks.filter(phase=phase)
        return list(tasks)


def owner(name):
    """The owning service's own voice: a service account of its name."""
    from apps.tenancy.models import ServiceAccount

    with system_scope():
        account = ServiceAccount.objects.get_or_create(name=name)[0]
    return Actor(service_account=account)


def complete(task, items=None):
    if task.owner == "steward":
        assert work.run_steward_task(task_id=task.pk) == "completed"
        return
    items = items or [{"what": task.detail.get("store", ""), "action": "deleted", "count": 3}]
    services.task_complete(
        actor=owner(task.owner), task_id=task.pk, receipt={"items": items, "digest": "ab" * 32}
    )


def fresh(obj):
    with system_scope():
        obj.refresh_from_db()
    return obj


# --------------------------------------------------------------------------- retention


@pytest.fixture
def telemetry(db):
    return DataClass.objects.get_or_create(slug="telemetry", defaults={"name": "Telemetry"})[0]


def make_store(slug, data_class, owner="knowledge"):
    return Store.objects.create(
        slug=slug,
        name=slug,
        owning_service=Service.objects.get_or_create(name=owner)[0],
        data_class=data_class,
        category=Store.Category.AUTHORITATIVE,
        workload_class="catalog",
    )


def live_binding(tenant, store, profile, *, status="active"):
    """A tenant's binding as provisioning leaves it (the path there is the stores tests')."""
    with tenant_scope(tenant):
        return StoreBinding.objects.create(
            tenant=tenant, store=store, profile=profile, region=tenant.home_region, status=status
        )


@pytest.fixture
def op(operator):
    return Actor(user=operator)
