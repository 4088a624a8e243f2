"""Issue 37 §2: settling an issue call that timed out re-evaluates the binding. Flagged,
retired or its tenant leaving meanwhile, the credentials the broker issued are revoked,
never recorded nor announced; the operator's exits stay open (retire, or an exception
that provisions it with new credentials)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import tenant_scope
from apps.eventing.effects import OutcomeUnknown, reconcile_due
from apps.eventing.models import UncertainEffect
from apps.stores import brokers, services
from apps.tenancy.services import tenant_set_lifecycle_status
from tests.stores.conftest import events, reload
from tests.stores.factories import bind, rule

pytestmark = pytest.mark.django_db


class TimingOutBroker(brokers.LocalFileBroker):
    """Issues the credentials, then the answer is lost (a remote failure mode)."""

    def issue_credentials(self, binding):
        super().issue_credentials(binding)
        raise OutcomeUnknown("the broker did not answer in time")


@pytest.fixture
def timed_out(tenant_a, store, profile, regions, settings):
    """A binding in Europe whose issue call timed out after the broker issued; the rule
    that allowed it is returned to be narrowed while the call is out."""
    allow = rule("allow", geographies=["EU", "IL"])
    settings.STEWARD_SECRET_BROKER = f"{__name__}.{TimingOutBroker.__name__}"
    binding = bind(tenant_a, store, profile, regions["westeurope"])
    assert services.binding_provision(binding_id=binding.pk) == "uncertain"
    settings.STEWARD_SECRET_BROKER = "apps.stores.brokers.LocalFileBroker"
    assert brokers.get_broker().find(str(binding.pk)) is not None  # issued, unrecorded
    return binding, allow


def reconcile(binding):
    with tenant_scope(binding.tenant_id):
        UncertainEffect.objects.update(next_check_at=timezone.now() - timedelta(seconds=1))
    return reconcile_due()


def never_provisioned(binding):
    binding = reload(binding)
    assert not binding.key_reference and not binding.connection_reference
    assert brokers.get_broker().find(str(binding.pk)) is None  # revoked at the broker
    assert "provisioned" not in [e["status"] for e in events()]
    return binding


def test_a_binding_flagged_while_its_call_was_out_gets_its_credentials_revoked(timed_out):
    binding, allow = timed_out
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["IL"], regions=[])
    assert reload(binding).violation

    assert reconcile(binding) == 1
    binding = never_provisioned(binding)
    assert binding.status == "requested" and binding.awaits_decision
    with tenant_scope(binding.tenant_id):
        assert "revoked" in binding.history.order_by("-at", "-id").first().reason


def test_an_exception_then_provisions_it_with_new_credentials(timed_out):
    binding, allow = timed_out
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["IL"], regions=[])
    reconcile(binding)

    services.binding_grant_exception(
        actor=SYSTEM_ACTOR,
        binding=reload(binding),
        reason="migration window",
        expires_at=timezone.now() + timedelta(days=7),
    )
    assert services.binding_provision(binding_id=binding.pk) == "succeeded"
    binding = reload(binding)
    assert binding.status == "provisioned"
    # the references recorded are live ones, not those revoked at settlement
    assert brokers.get_broker().find(str(binding.pk)) == (
        binding.key_reference,
        binding.connection_reference,
    )
    assert brokers.LocalFileBroker().read(binding.key_reference)


def test_or_the_operator_retires_it(timed_out):
    binding, allow = timed_out
    services.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["IL"], regions=[])
    reconcile(binding)
    services.binding_retire(actor=SYSTEM_ACTOR, binding=reload(binding), reason="not in EU")
    assert services.binding_revoke(binding_id=binding.pk) == "retired"
    assert never_provisioned(binding).status == "retired"


def test_a_binding_retired_while_its_call_was_out_gets_its_credentials_revoked(timed_out):
    binding, _ = timed_out
    services.binding_retire(actor=SYSTEM_ACTOR, binding=reload(binding), reason="changed mind")
    # the retirement does not wait for the call: nothing is recorded yet to revoke
    services.binding_revoke(binding_id=binding.pk)
    assert reload(binding).status == "retired"

    reconcile(binding)
    assert never_provisioned(binding).status == "retired"


def test_a_binding_whose_tenant_began_offboarding_while_its_call_was_out_is_not_provisioned(
    timed_out, tenant_a
):
    binding, _ = timed_out
    with tenant_scope(tenant_a):
        tenant_set_lifecycle_status(tenant_id=tenant_a.pk, status="offboarding")

    reconcile(binding)
    binding = never_provisioned(binding)
    assert binding.status == "requested" and "offboarding" in binding.status_reason
