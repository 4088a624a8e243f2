"""How eventing's reconciler settles a workflow start whose answer never came.

`asset_delegate` records each start as an uncertain effect (apps.eventing.effects);
this adapter looks the instance up by the start's idempotency key and, once it is
known, records the delegation on the asset. Registered when the app is ready.
"""

from __future__ import annotations

from apps.assets import services
from apps.assets.workflow import TARGET, WorkflowServiceClient
from apps.eventing.effects import Outcome, register_adapter
from apps.eventing.models import UncertainEffect


class StartReconciler:
    """Settles uncertain starts by asking the Workflow Service for the instance by key,
    and records the delegation once it is known."""

    def check(self, effect: UncertainEffect) -> Outcome:
        instance = WorkflowServiceClient().find_by_key(effect.external_ref)
        if instance is None:
            return Outcome("unknown")
        return Outcome(UncertainEffect.State.SUCCEEDED, {"instance_id": str(instance)})

    def settled(self, effect: UncertainEffect) -> None:
        if effect.state == UncertainEffect.State.SUCCEEDED:
            services.record_started_instance(effect)


register_adapter(TARGET, StartReconciler())
