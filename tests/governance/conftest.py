import pytest

from apps.core.context import Actor
from apps.registry.models import Service
from apps.stores.models import Store, StoreBinding, StoreProfile
from apps.tenancy.models import DataClass
from apps.tenancy.scope import tenant_scope


@pytest.fixture
def personal(db):
    return DataClass.objects.get_or_create(slug="personal", defaults={"name": "Personal"})[0]


@pytest.fixture
def telemetry(db):
    return DataClass.objects.get_or_create(slug="telemetry", defaults={"name": "Telemetry"})[0]


def make_store(slug, data_class, owner="knowledge"):
    service = Service.objects.get_or_create(name=owner)[0]
    return Store.objects.create(
        slug=slug,
        name=slug,
        owning_service=service,
        data_class=data_class,
        category=Store.Category.AUTHORITATIVE,
        workload_class="catalog",
    )


@pytest.fixture
def store(personal):
    return make_store("knowledge-sql", personal)


@pytest.fixture
def profile(db):
    return StoreProfile.objects.get_or_create(
        slug="postgres-dedicated",
        defaults={"name": "PostgreSQL", "engine": "postgresql", "shape": "dedicated_tables"},
    )[0]


def live_binding(tenant, store, profile, *, status="active"):
    """A tenant's binding as provisioning leaves it (the path there is the stores tests')."""
    with tenant_scope(tenant):
        return StoreBinding.objects.create(
            tenant=tenant, store=store, profile=profile, region=tenant.home_region, status=status
        )


@pytest.fixture
def op(operator):
    return Actor(user=operator)
