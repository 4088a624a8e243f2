import pytest

from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import OutboxEvent
from apps.stores.models import StoreBinding
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


def reload(binding):
    """The binding as stored now, read in its tenant's scope."""
    with tenant_scope(binding.tenant_id):
        return StoreBinding.objects.get(pk=binding.pk)


def events(event_type="StoreBindingChanged"):
    """The payloads of the binding events written so far, oldest first."""
    with system_scope():
        return [
            e.payload
            for e in OutboxEvent.objects.filter(
                topic="stores.binding", event_type=event_type
            ).order_by("id")
        ]
