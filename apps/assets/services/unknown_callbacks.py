"""Callbacks for an instance no asset had: they wait on a person, who links each to the
asset it was meant for, or dismisses it with a reason."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.assets.codes import AssetCode
from apps.assets.models import Asset, WorkflowCallback
from apps.assets.services.callbacks import kick_callback_worker
from apps.assets.services.delegation import asset_record_delegation, delegation_pending
from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import owner_scope, tenant_scope
from apps.tenancy.audit import audit_record


def _locked_unknown_receipt(receipt: WorkflowCallback) -> WorkflowCallback:
    """The receipt, locked in its owner's scope, if it names an unknown instance and
    nobody has resolved it yet; 409 otherwise."""
    with owner_scope(receipt.tenant_id):
        locked = WorkflowCallback.objects.select_for_update().get(pk=receipt.pk)
    if locked.outcome != WorkflowCallback.Outcome.UNKNOWN_INSTANCE:
        raise Conflict(
            "The callback's instance was known: it needs no one.",
            code=AssetCode.CALLBACK_NOT_UNKNOWN,
        )
    if locked.resolution:
        raise Conflict(
            f"The callback was {locked.resolution} already.",
            code=AssetCode.CALLBACK_ALREADY_RESOLVED,
            resolution=locked.resolution,
        )
    return locked


def _resolve_receipt(
    receipt: WorkflowCallback, *, actor: Actor, resolution: str, reason: str, asset=None
) -> WorkflowCallback:
    with owner_scope(receipt.tenant_id):
        receipt.resolution = resolution
        receipt.resolved_at = timezone.now()
        receipt.resolved_by = actor.label[:150]
        receipt.resolution_reason = reason
        receipt.linked_asset_id = asset.pk if asset is not None else None
        receipt.save(
            update_fields=[
                "resolution",
                "resolved_at",
                "resolved_by",
                "resolution_reason",
                "linked_asset_id",
            ]
        )
        audit_record(
            actor=actor,
            action=f"callback.{resolution}",
            instance=receipt,
            tenant=receipt.tenant_id,
            changes={
                "resolution": ["", resolution],
                "reason": [None, reason or None],
                "asset": [None, str(asset.pk) if asset is not None else None],
            },
        )
    return receipt


def callback_link(
    *, receipt: WorkflowCallback, asset: Asset, actor: Actor, reason: str = ""
) -> WorkflowCallback:
    """Link a callback for an instance no asset had to the asset it was meant for.

    If the asset's current request waits on a delegation with no instance yet (a start
    whose answer never came), the receipt's instance becomes its instance (audited like
    any delegation) and the decision is applied as a callback would be. An asset that
    has been decided takes the receipt as history only. The receipt itself is
    platform-wide (no tenant knew it), so the asset's tenant gets a copy of its own, and
    the original records the link. Operators act on platform-wide receipts.
    """
    with transaction.atomic():
        original = _locked_unknown_receipt(receipt)
        if original.tenant_id is not None and original.tenant_id != asset.tenant_id:
            raise Conflict(
                "The callback came for another tenant's asset.",
                code=AssetCode.CALLBACK_TENANT_MISMATCH,
            )
        instance = original.workflow_instance_id
        with tenant_scope(asset.tenant_id):
            asset = Asset.objects.select_for_update().get(pk=asset.pk)
            if asset.status == Asset.Status.DRAFT:
                raise Conflict(
                    "The asset was never requested: no workflow decides it.",
                    code=AssetCode.NOT_REQUESTED,
                    status=asset.status,
                )
            pending = delegation_pending(asset)
            if asset.is_workflow_managed or (
                asset.status == Asset.Status.REQUESTED and not pending
            ):
                raise Conflict(
                    "The asset waits on another workflow instance.",
                    code=AssetCode.CALLBACK_INSTANCE_MISMATCH,
                    workflow_instance_id=str(asset.workflow_instance_id),
                )
            if pending:
                asset_record_delegation(
                    asset=asset,
                    approval_request_id=asset.approval_request_id,
                    workflow_instance_id=instance,
                )
            copy = WorkflowCallback.objects.create(
                tenant_id=asset.tenant_id,
                asset_id=asset.pk,
                workflow_instance_id=instance,
                decision=original.decision,
                reason=original.reason,
                callback_id=original.callback_id,
                received_at=original.received_at,
                outcome=(
                    WorkflowCallback.Outcome.PENDING
                    if pending
                    else WorkflowCallback.Outcome.IGNORED
                ),
            )
            audit_record(
                actor=actor,
                action="asset.callback_linked",
                instance=asset,
                tenant=asset.tenant_id,
                changes={
                    "callback": [None, original.pk],
                    "workflow_instance_id": [None, str(instance)],
                    "applied": [None, pending],
                },
            )
        _resolve_receipt(
            original,
            actor=actor,
            resolution=WorkflowCallback.Resolution.LINKED,
            reason=reason,
            asset=asset,
        )
        if pending:
            tenant_id = asset.tenant_id
            transaction.on_commit(lambda: kick_callback_worker(tenant_id), robust=True)
    original.linked_copy = copy
    return original


def callback_dismiss(*, receipt: WorkflowCallback, actor: Actor, reason: str) -> WorkflowCallback:
    """Dismiss a callback for an unknown instance, with a reason (a test instance, a
    misdirected service): it leaves the attention queue and changes nothing else."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationFailed("Say why the callback is dismissed.", code=CoreCode.REASON_REQUIRED)
    with transaction.atomic():
        original = _locked_unknown_receipt(receipt)
        return _resolve_receipt(
            original,
            actor=actor,
            resolution=WorkflowCallback.Resolution.DISMISSED,
            reason=reason,
        )
