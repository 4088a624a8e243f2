"""How eventing's reconciler settles a workflow start whose answer never came.

`asset_delegate` records each start as an uncertain effect (apps.eventing.effects);
this adapter looks the instance up by the start's idempotency key and, once it is
known, records the delegation on the asset. Registered when the app is ready.

At the reconciliation limit, a start the Workflow Service still does not know never
arrived: it is sent again under the same idempotency key, so however the first one
fared the other side can never hold two instances for one request.
"""

from __future__ import annotations

import uuid

from apps.assets import services
from apps.assets.codes import AssetCode
from apps.assets.workflow import TARGET, WorkflowServiceClient, WorkflowServiceError
from apps.core.errors import ValidationFailed
from apps.eventing.effects import UNKNOWN, Outcome, OutcomeUnknown, register_adapter
from apps.eventing.models import UncertainEffect


class StartReconciler:
    """Settles uncertain starts by asking the Workflow Service for the instance by key,
    and records the delegation (or its failure) once it is known."""

    topic = services.TOPIC

    def check(self, effect: UncertainEffect) -> Outcome:
        instance = WorkflowServiceClient().find_by_key(effect.external_ref)
        if instance is None:
            return Outcome(UNKNOWN)
        return Outcome(UncertainEffect.State.SUCCEEDED, {"instance_id": str(instance)})

    def at_limit(self, effect: UncertainEffect) -> Outcome:
        asset = services.asset_of_start(effect)
        if asset is None or not services.delegation_pending(asset):
            # Nothing waits on this start any more: starting it now would only leave an
            # instance nobody reads.
            return Outcome(
                UncertainEffect.State.FAILED, error="no asset waits on this start any more"
            )
        try:
            instance = WorkflowServiceClient().start_approval(
                idempotency_key=effect.external_ref,
                asset_id=str(asset.pk),
                tenant_id=str(asset.tenant_id),
            )
        except OutcomeUnknown as exc:
            return Outcome(UNKNOWN, error=f"sent again, still no answer: {exc}")
        except WorkflowServiceError as exc:
            # Named as perform_effect names a definite failure: the asset tells a refusal
            # from another failure by it.
            name = type(exc).__name__
            return Outcome(UncertainEffect.State.FAILED, error=f"{name}: {exc}")
        return Outcome(UncertainEffect.State.SUCCEEDED, {"instance_id": str(instance)})

    def reference_result(self, reference: str) -> dict:
        try:
            return {"instance_id": str(uuid.UUID(reference))}
        except ValueError:
            raise ValidationFailed(
                "A Workflow Service instance id is a UUID.", code=AssetCode.INVALID_REFERENCE
            ) from None

    def settled(self, effect: UncertainEffect) -> None:
        if effect.state == UncertainEffect.State.SUCCEEDED:
            services.record_started_instance(effect)
        else:
            services.record_failed_start(effect)


register_adapter(TARGET, StartReconciler())
