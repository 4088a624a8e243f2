import pytest

from apps.registry.models import Service
from apps.stores.models import ProfileCertification, ResidencyRule, Store, StoreProfile
from apps.tenancy.models import DataClass, Region


@pytest.fixture(autouse=True)
def local_broker(settings, tmp_path):
    settings.STEWARD_SECRET_BROKER = "apps.stores.brokers.LocalFileBroker"
    settings.STEWARD_SECRET_BROKER_DIR = str(tmp_path / "secrets")
    return tmp_path / "secrets"


@pytest.fixture
def regions(db):
    made = {}
    for slug, jurisdiction in (("israelcentral", "IL"), ("westeurope", "EU"), ("eastus", "US")):
        made[slug], _ = Region.objects.get_or_create(
            slug=slug, defaults={"name": slug, "jurisdiction": jurisdiction}
        )
    return made


@pytest.fixture
def personal(db):
    return DataClass.objects.get_or_create(slug="personal", defaults={"name": "Personal"})[0]


@pytest.fixture
def store(db, personal):
    service = Service.objects.get_or_create(name="knowledge")[0]
    return Store.objects.create(
        slug="knowledge-sql",
        name="Knowledge SQL",
        owning_service=service,
        data_class=personal,
        category=Store.Category.AUTHORITATIVE,
        workload_class="catalog",
    )


@pytest.fixture
def profile(db):
    return StoreProfile.objects.create(
        slug="postgres-dedicated",
        name="PostgreSQL, dedicated tables",
        engine="postgresql",
        shape="dedicated_tables",
        provides_retention_cleanup=True,
    )


def certify(profile, workload, by="perf-team"):
    return ProfileCertification.objects.create(
        profile=profile, workload_class=workload, certified_by=by, benchmark_reference="BM-1"
    )


def rule(effect, *, regions=(), geographies=(), tenant=None, data_class=None, **extra):
    from apps.core.context import SYSTEM_ACTOR
    from apps.stores import services

    made = ResidencyRule(
        tenant=tenant, data_class=data_class, effect=effect, geographies=list(geographies), **extra
    )
    return services.rule_save(actor=SYSTEM_ACTOR, rule=made, regions=list(regions))


def bind(tenant, store, profile, region):
    from apps.core.context import SYSTEM_ACTOR
    from apps.stores import services

    return services.binding_set(
        actor=SYSTEM_ACTOR, tenant=tenant, store=store, profile=profile, region=region
    )


def provisioned(tenant, store, profile, region):
    from apps.stores import services

    binding = bind(tenant, store, profile, region)
    services.binding_provision(binding_id=binding.pk)
    return binding
