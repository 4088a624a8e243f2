import pytest

from apps.stores.models import ProfileCertification, ResidencyRule
from apps.tenancy.models import Region


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
