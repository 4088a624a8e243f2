import pytest

from apps.core.context import Actor
from apps.core.scope import tenant_scope
from apps.core.setup import SetupReport
from apps.governance import install
from apps.governance.models import RetentionRule
from apps.registry.models import Service
from apps.stores.models import Store, StoreBinding, StoreProfile
from apps.tenancy.models import DataClass
from tests.governance.factories import OWNED, live_binding, make_store


@pytest.fixture(autouse=True)
def governance_settings(settings, tmp_path):
    settings.STEWARD_SECRET_BROKER_DIR = str(tmp_path / "secrets")


@pytest.fixture
def no_cooling_off(settings):
    """Approved deletions start at once."""
    settings.STEWARD_DELETION_GRACE_HOURS = 0


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


@pytest.fixture
def telemetry(db):
    return DataClass.objects.get_or_create(slug="telemetry", defaults={"name": "Telemetry"})[0]


@pytest.fixture
def retention_bindings(tenant_a, tenant_b, store, profile, personal, telemetry):
    """tenant_a and tenant_b each bind knowledge-sql (personal); tenant_a also binds
    metrics-ts (telemetry, owned by the metrics service)."""
    metrics = make_store("metrics-ts", telemetry, owner="metrics")
    return {
        "a": live_binding(tenant_a, store, profile),
        "b": live_binding(tenant_b, store, profile, status="provisioned"),
        "a-metrics": live_binding(tenant_a, metrics, profile),
        "retired": live_binding(tenant_b, metrics, profile, status="retired"),
        "metrics": metrics,
    }


@pytest.fixture
def op(operator):
    return Actor(user=operator)


@pytest.fixture
def own_rules(db):
    """What set-up installs: Steward's data classes and their default rules."""
    install.install_reference_data(SetupReport())
    return {rule.name: rule for rule in RetentionRule.objects.all()}
