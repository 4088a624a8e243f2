"""An issue call to the secret broker that timed out is reconciled, never left
unexplained: the reconciler asks the broker and settles the binding either way."""

import pytest

from apps.core.scope import tenant_scope
from apps.eventing.effects import OutcomeUnknown, reconcile_due
from apps.eventing.models import UncertainEffect
from apps.stores import brokers, services
from tests.stores.conftest import reload
from tests.stores.factories import bind, rule

pytestmark = pytest.mark.django_db


class TimingOutBroker(brokers.LocalFileBroker):
    """Issues the credentials, then the answer is lost (a remote failure mode)."""

    def issue_credentials(self, binding):
        super().issue_credentials(binding)
        raise OutcomeUnknown("the broker did not answer in time")


class SilentBroker(brokers.LocalFileBroker):
    def issue_credentials(self, binding):
        raise OutcomeUnknown("the broker did not answer in time")


@pytest.mark.parametrize(
    ("broker", "settled_as"), [(TimingOutBroker, "provisioned"), (SilentBroker, "failed")]
)
def test_a_broker_timeout_is_reconciled_never_left_unexplained(
    tenant_a, store, profile, regions, settings, broker, settled_as
):
    rule("allow", geographies=["IL"])
    settings.STEWARD_SECRET_BROKER = f"{__name__}.{broker.__name__}"
    binding = bind(tenant_a, store, profile, regions["israelcentral"])
    assert services.binding_provision(binding_id=binding.pk) == "uncertain"
    assert "timed out" in reload(binding).status_reason
    settings.STEWARD_SECRET_BROKER = "apps.stores.brokers.LocalFileBroker"
    with tenant_scope(tenant_a):
        UncertainEffect.objects.update(next_check_at=binding.created_at)
    assert reconcile_due() == 1
    binding = reload(binding)
    assert binding.status == settled_as
    assert bool(binding.key_reference) == (settled_as == "provisioned")
