"""Asset approval: by a person, or delegated to the Workflow Service.

Every transition is a conditional UPDATE on the status it expects, so concurrent
requests (two operators, fifty duplicate callbacks) change an asset at most once and
the losers learn it, instead of a read-then-write race deciding twice.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from apps.assets.models import Asset, WorkflowCallback
from apps.core.context import Actor
from apps.core.errors import InvalidTransition
from apps.eventing.services import emit
from apps.tenancy.audit import audit_record
from apps.tenancy.scope import owner_scope, system_scope, tenant_scope

TOPIC = "assets.asset"
logger = logging.getLogger(__name__)


def _event(asset: Asset, event_type: str, **payload) -> None:
    emit(
        topic=TOPIC,
        event_type=event_type,
        aggregate_type="asset",
        aggregate_id=str(asset.pk),
        payload={"asset_id": str(asset.pk), "status": asset.status, **payload},
        tenant=asset.tenant_id,
    )


def asset_create(*, actor: Actor, tenant, name: str, description: str = "") -> Asset:
    asset = Asset(tenant=tenant, name=name, description=description)
    asset.full_clean()
    with tenant_scope(tenant):
        asset.save()
        audit_record(
            actor=actor,
            action="asset.create",
            instance=asset,
            tenant=tenant,
            changes={"name": [None, name]},
        )
    return asset


def _transition(asset: Asset, *, expect: set[str], **changes) -> Asset:
    """UPDATE … WHERE status IN expect; InvalidTransition when the asset had moved on."""
    updated = Asset.objects.filter(pk=asset.pk, status__in=expect).update(
        updated_at=timezone.now(), **changes
    )
    if not updated:
        asset.refresh_from_db()
        raise InvalidTransition(
            f"The asset is {asset.status}; this needs it {' or '.join(sorted(expect))}.",
            status=asset.status,
        )
    asset.refresh_from_db()
    return asset


def asset_request_approval(*, actor: Actor, asset: Asset, delegate: bool) -> Asset:
    """Draft (or rejected) → Requested. With `delegate`, the Workflow Service will be
    asked to decide; the request's id becomes the start call's idempotency key."""
    with tenant_scope(asset.tenant_id):
        asset = _transition(
            asset,
            expect={Asset.Status.DRAFT, Asset.Status.REJECTED},
            status=Asset.Status.REQUESTED,
            approval_request_id=uuid.uuid4(),
            # A new request starts a new decision: the previous workflow link is history.
            workflow_instance_id=None,
            decided_at=None,
            decided_by="",
            decision_reason="",
        )
        audit_record(
            actor=actor,
            action="asset.request_approval",
            instance=asset,
            tenant=asset.tenant_id,
            changes={"delegated": [None, delegate]},
        )
        _event(
            asset,
            "AssetApprovalRequested",
            delegated=delegate,
            approval_request_id=str(asset.approval_request_id),
        )
        if delegate:
            transaction.on_commit(lambda: _start_delegation(asset.pk), robust=True)
    return asset


def _start_delegation(asset_id) -> None:
    from apps.assets.tasks import delegate_approval

    delegate_approval.delay(asset_id=str(asset_id))


def asset_delegate(*, asset_id) -> str:
    """Ask the Workflow Service to decide a Requested asset, and keep the instance id.

    The call is an uncertain effect keyed by the approval request: answered, the id is
    stored at once; unanswered, the reconciler finds the instance by that key later.
    """
    from apps.assets import workflow
    from apps.eventing.effects import perform_effect

    with system_scope():
        asset = Asset.objects.filter(pk=asset_id).first()
    if asset is None or asset.status != Asset.Status.REQUESTED or asset.workflow_instance_id:
        return "nothing to do"
    key = str(asset.approval_request_id)
    effect = perform_effect(
        tenant_id=asset.tenant_id,
        actor="assets",
        target_system=workflow.TARGET,
        operation=workflow.START,
        external_ref=key,
        call=lambda: {
            "instance_id": str(
                workflow.WorkflowServiceClient().start_approval(
                    idempotency_key=key, asset_id=str(asset.pk), tenant_id=str(asset.tenant_id)
                )
            )
        },
    )
    if effect.state == effect.State.SUCCEEDED:
        record_started_instance(effect)
    return effect.state


def record_started_instance(effect) -> bool:
    """Store the instance a settled start effect reports on the asset it started for."""
    with system_scope():
        asset = Asset.objects.filter(approval_request_id=effect.external_ref).first()
    if asset is None:
        return False
    return asset_record_delegation(
        asset=asset,
        approval_request_id=asset.approval_request_id,
        workflow_instance_id=uuid.UUID(effect.result["instance_id"]),
    )


def asset_record_delegation(
    *, asset: Asset, approval_request_id: uuid.UUID, workflow_instance_id: uuid.UUID
) -> bool:
    """Store the workflow instance that decides this request. Conditional on the same
    request still waiting without one, so a retried or late start cannot overwrite it."""
    with tenant_scope(asset.tenant_id):
        updated = Asset.objects.filter(
            pk=asset.pk,
            status=Asset.Status.REQUESTED,
            approval_request_id=approval_request_id,
            workflow_instance_id__isnull=True,
        ).update(workflow_instance_id=workflow_instance_id, updated_at=timezone.now())
        if updated:
            asset.refresh_from_db()
            _event(asset, "AssetApprovalDelegated", workflow_instance_id=str(workflow_instance_id))
    return bool(updated)


def asset_decide(*, actor: Actor, asset: Asset, approve: bool, reason: str = "") -> Asset:
    """A person's decision. Not for a workflow-managed asset: its workflow decides."""
    with tenant_scope(asset.tenant_id):
        if Asset.objects.filter(pk=asset.pk).workflow_managed().exists():
            raise InvalidTransition(
                "The Workflow Service decides this asset.", code="workflow_managed"
            )
        status = Asset.Status.APPROVED if approve else Asset.Status.REJECTED
        asset = _transition(
            asset,
            expect={Asset.Status.REQUESTED},
            status=status,
            decided_at=timezone.now(),
            decided_by=actor.label[:150],
            decision_reason=reason,
        )
        audit_record(
            actor=actor,
            action=f"asset.{status}",
            instance=asset,
            tenant=asset.tenant_id,
            changes={"status": [Asset.Status.REQUESTED, status]},
        )
        _event(asset, "AssetApproved" if approve else "AssetRejected", reason=reason)
    return asset


@dataclass(frozen=True)
class CallbackOutcome:
    outcome: str  # "applied", "ignored" or "unknown_instance"
    asset: Asset | None = None


def apply_workflow_decision(
    *, workflow_instance_id: uuid.UUID, approve: bool, reason: str = ""
) -> CallbackOutcome:
    """Apply the Workflow Service's decision once.

    Conditional on the asset still being Requested under this instance: of any number
    of duplicate callbacks, concurrent or late, exactly one changes the asset and
    announces it; the others are acknowledged (WorkflowCallbackIgnored) and change
    nothing. The workflow reference stays on the row.
    """
    with system_scope():
        asset = Asset.objects.filter(workflow_instance_id=workflow_instance_id).first()
    if asset is None:
        return CallbackOutcome("unknown_instance")
    status = Asset.Status.APPROVED if approve else Asset.Status.REJECTED
    with tenant_scope(asset.tenant_id), transaction.atomic():
        updated = Asset.objects.filter(
            pk=asset.pk,
            workflow_instance_id=workflow_instance_id,
            status=Asset.Status.REQUESTED,
        ).update(
            status=status,
            decided_at=timezone.now(),
            decided_by="workflow-service",
            decision_reason=reason,
            updated_at=timezone.now(),
        )
        asset.refresh_from_db()
        if not updated:
            _event(
                asset,
                "WorkflowCallbackIgnored",
                workflow_instance_id=str(workflow_instance_id),
                decision="approve" if approve else "reject",
            )
            return CallbackOutcome("ignored", asset)
        audit_record(
            actor=None,
            action=f"asset.{status}",
            instance=asset,
            tenant=asset.tenant_id,
            changes={
                "status": [Asset.Status.REQUESTED, status],
                "decided_by": [None, "workflow-service"],
            },
        )
        _event(
            asset,
            "AssetApproved" if approve else "AssetRejected",
            reason=reason,
            workflow_instance_id=str(workflow_instance_id),
        )
    return CallbackOutcome("applied", asset)


# --------------------------------------------------------------------------- callbacks


def callback_receive(
    *, workflow_instance_id: uuid.UUID, approve: bool, reason: str, callback_id: str
) -> WorkflowCallback:
    """Record a verified callback and queue its decision; the receipt is the queue.

    A callback for an instance Steward does not know is recorded too (for operators)
    and answered as such; nothing else changes.
    """
    with system_scope():
        asset = Asset.objects.filter(workflow_instance_id=workflow_instance_id).first()
    receipt = WorkflowCallback(
        tenant_id=asset.tenant_id if asset else None,
        workflow_instance_id=workflow_instance_id,
        decision="approve" if approve else "reject",
        reason=reason,
        callback_id=callback_id[:100],
        outcome=(
            WorkflowCallback.Outcome.PENDING if asset else WorkflowCallback.Outcome.UNKNOWN_INSTANCE
        ),
    )
    with owner_scope(receipt.tenant_id):
        receipt.save()
        if asset is not None:
            transaction.on_commit(lambda: _queue_callback(receipt.pk), robust=True)
    return receipt


def _queue_callback(receipt_id: int) -> None:
    from apps.assets.tasks import apply_workflow_callback

    apply_workflow_callback.delay(receipt_id=receipt_id)


def callback_apply(*, receipt_id: int) -> str:
    """Apply a received callback's decision (once) and record the outcome on the receipt."""
    with system_scope():
        receipt = WorkflowCallback.objects.filter(
            pk=receipt_id, outcome=WorkflowCallback.Outcome.PENDING
        ).first()
    if receipt is None:
        return "done already"
    result = apply_workflow_decision(
        workflow_instance_id=receipt.workflow_instance_id,
        approve=receipt.decision == "approve",
        reason=receipt.reason,
    )
    with owner_scope(receipt.tenant_id):
        WorkflowCallback.objects.filter(
            pk=receipt.pk, outcome=WorkflowCallback.Outcome.PENDING
        ).update(outcome=result.outcome, applied_at=timezone.now())
    return result.outcome


# --------------------------------------------------------------------------- reconciliation


def reconcile_stale_delegations(*, limit: int = 100) -> dict[str, int]:
    """Ask the Workflow Service about assets Requested under a workflow for too long.

    Opt-in (its schedule is installed disabled). A final decision the service reports
    is applied exactly as a callback would be; an instance it does not know is flagged
    in the asset's history and the log, and left for a person. Running instances are
    left alone. It never starts, cancels or changes anything on the other side.
    """
    from datetime import timedelta

    from django.conf import settings

    from apps.assets.workflow import WorkflowServiceClient

    cutoff = timezone.now() - timedelta(minutes=settings.STEWARD_WORKFLOW_RECONCILE_AFTER_MINUTES)
    with system_scope():
        stale = list(Asset.objects.workflow_managed().filter(updated_at__lt=cutoff)[:limit])
    client = WorkflowServiceClient()
    counts = {"applied": 0, "running": 0, "unknown": 0}
    for asset in stale:
        state = client.instance_state(asset.workflow_instance_id)
        if state is None:
            with tenant_scope(asset.tenant_id):
                audit_record(
                    actor=None,
                    action="asset.workflow_unknown",
                    instance=asset,
                    tenant=asset.tenant_id,
                    changes={"workflow_instance_id": [str(asset.workflow_instance_id)] * 2},
                )
            logger.warning(
                "asset %s waits on workflow %s, which the Workflow Service does not know",
                asset.pk,
                asset.workflow_instance_id,
            )
            counts["unknown"] += 1
        elif state.get("state") == "completed" and state.get("decision") in ("approve", "reject"):
            apply_workflow_decision(
                workflow_instance_id=asset.workflow_instance_id,
                approve=state["decision"] == "approve",
                reason=state.get("reason", "") or "reported by the reconciler",
            )
            counts["applied"] += 1
        else:
            counts["running"] += 1
    return counts
