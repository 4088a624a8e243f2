"""How an issue call to the secret broker that timed out is settled: the reconciler
asks the broker what it holds, then the binding is settled either way."""

from __future__ import annotations

from apps.eventing.effects import Outcome, register_adapter
from apps.eventing.models import UncertainEffect
from apps.stores import brokers, services


class IssueReconciler:
    """Settles an issue call that timed out by asking the broker what it holds."""

    def check(self, effect: UncertainEffect) -> Outcome:
        found = brokers.get_broker().find(brokers.binding_of(effect.external_ref))
        if found is None:
            return Outcome(UncertainEffect.State.FAILED, {"error": "the broker issued nothing"})
        key, connection = found
        return Outcome(
            UncertainEffect.State.SUCCEEDED,
            {"key_reference": key, "connection_reference": connection},
        )

    def settled(self, effect: UncertainEffect) -> None:
        services.binding_record_credentials(effect)


register_adapter(brokers.TARGET, IssueReconciler())
