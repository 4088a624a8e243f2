"""Callbacks for an instance no asset had: they wait on a person, who links each to the
asset it was meant for, or dismisses it with a reason."""

from __future__ import annotations

from django.db import connection, transaction
from django.utils import timezone

from apps.assets.codes import AssetCode
from apps.assets.models import Asset, WorkflowCallback
from apps.assets.services.callbacks import kick_callback_worker
from apps.assets.services.delegation import asset_record_delegation, delegation_pending
from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import owner_scope, system_scope, tenant_scope
from apps.eventing.services import aggregate_lock_key
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


def _resolve_receipts(
    receipts: list[WorkflowCallback], *, actor: Actor, resolution: str, reason: str, asset=None
) -> WorkflowCallback:
    """Record each receipt's resolution, audited one by one; the first, with them all
    as `folded` (one attention item was all of them)."""
    for receipt in receipts:
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
    first = receipts[0]
    first.folded = receipts
    return first


def _locked_receipts_of_instance(receipt: WorkflowCallback) -> list[WorkflowCallback]:
    """The receipt and every other unresolved unknown-instance receipt of its instance
    (a Workflow Service retrying its callback), locked, oldest first: the attention
    queue shows them as one item, and one act resolves them all. Refused as
    _locked_unknown_receipt refuses the first."""
    first = _locked_unknown_receipt(receipt)
    with system_scope():
        others = list(
            WorkflowCallback.objects.filter(
                workflow_instance_id=first.workflow_instance_id,
                outcome=WorkflowCallback.Outcome.UNKNOWN_INSTANCE,
                resolution=WorkflowCallback.Resolution.NONE,
            )
            .exclude(pk=first.pk)
            .order_by("id")
            .values_list("pk", "tenant_id")
        )
    locked = [first]
    for pk, tenant_id in others:
        with owner_scope(tenant_id):
            row = (
                WorkflowCallback.objects.select_for_update()
                .filter(pk=pk, resolution=WorkflowCallback.Resolution.NONE)
                .first()
            )
        if row is not None:
            locked.append(row)
    return sorted(locked, key=lambda row: row.pk)


def _lock_instance(instance) -> None:
    """Serialise the links of one instance: of two operators linking it to two assets at
    once, the second finds it held (the unique index guards only the waiting asset)."""
    with connection.cursor() as cursor:
        key = aggregate_lock_key("assets.instance", str(instance))
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [key])


def _refuse_instance_held_elsewhere(instance, asset: Asset) -> None:
    """An instance decides one asset: linking it to a second one would send its
    callbacks to whichever the look-up picked, perhaps another tenant's."""
    with system_scope():
        holder = (
            Asset.objects.filter(workflow_instance_id=instance)
            .exclude(pk=asset.pk)
            .values_list("pk", flat=True)
            .first()
        )
    if holder is not None:
        raise Conflict(
            "Another asset has that workflow instance already: an instance decides one asset.",
            code=AssetCode.WORKFLOW_INSTANCE_LINKED,
            workflow_instance_id=str(instance),
        )


def callback_link(
    *, receipt: WorkflowCallback, asset: Asset, actor: Actor, reason: str = ""
) -> WorkflowCallback:
    """Link a callback for an instance no asset had to the asset it was meant for.

    If the asset's current request waits on a delegation with no instance yet (a start
    whose answer never came), the receipt's instance becomes its instance (audited like
    any delegation) and the decision is applied as a callback would be. An asset that
    has been decided takes the receipt as history only. An instance another asset has
    (since the callback came, the start's answer was recorded on it) is refused:
    `workflow_instance_linked`. Every unresolved receipt of the instance is linked at
    once (duplicates are one attention item). The receipts are platform-wide (no tenant
    knew them), so the asset's tenant gets a copy of each of its own, and each original
    records the link. Operators act on platform-wide receipts.
    """
    with transaction.atomic():
        _lock_instance(receipt.workflow_instance_id)
        originals = _locked_receipts_of_instance(receipt)
        if any(o.tenant_id is not None and o.tenant_id != asset.tenant_id for o in originals):
            raise Conflict(
                "The callback came for another tenant's asset.",
                code=AssetCode.CALLBACK_TENANT_MISMATCH,
            )
        instance = originals[0].workflow_instance_id
        _refuse_instance_held_elsewhere(instance, asset)
        with tenant_scope(asset.tenant_id):
            asset = Asset.objects.select_for_update().get(pk=asset.pk)
            if asset.status == Asset.Status.DRAFT:
                raise Conflict(
                    "The asset was never requested: no workflow decides it.",
                    code=AssetCode.NOT_REQUESTED,
                    status=asset.status,
                )
            pending = delegation_pending(asset)
            # The asset waits on this very instance (its start's answer was recorded
            # after the callback came): the callback decides it.
            decides = pending or (
                asset.is_workflow_managed and asset.workflow_instance_id == instance
            )
            if not decides and asset.status == Asset.Status.REQUESTED:
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
            copies = [
                WorkflowCallback.objects.create(
                    tenant_id=asset.tenant_id,
                    asset_id=asset.pk,
                    workflow_instance_id=instance,
                    decision=original.decision,
                    reason=original.reason,
                    callback_id=original.callback_id,
                    received_at=original.received_at,
                    # The worker applies the first; the others find it decided.
                    outcome=(
                        WorkflowCallback.Outcome.PENDING
                        if decides
                        else WorkflowCallback.Outcome.IGNORED
                    ),
                )
                for original in originals
            ]
            audit_record(
                actor=actor,
                action="asset.callback_linked",
                instance=asset,
                tenant=asset.tenant_id,
                changes={
                    "callback": [None, originals[0].pk],
                    "callbacks": [None, [o.pk for o in originals]],
                    "workflow_instance_id": [None, str(instance)],
                    "applied": [None, decides],
                },
            )
        first = _resolve_receipts(
            originals,
            actor=actor,
            resolution=WorkflowCallback.Resolution.LINKED,
            reason=reason,
            asset=asset,
        )
        if decides:
            tenant_id = asset.tenant_id
            transaction.on_commit(lambda: kick_callback_worker(tenant_id), robust=True)
    first.linked_copy = copies[0]
    return first


def callback_dismiss(*, receipt: WorkflowCallback, actor: Actor, reason: str) -> WorkflowCallback:
    """Dismiss a callback for an unknown instance, with a reason (a test instance, a
    misdirected service), and every other unresolved one of its instance (one attention
    item): they leave the attention queue and change nothing else."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationFailed("Say why the callback is dismissed.", code=CoreCode.REASON_REQUIRED)
    with transaction.atomic():
        return _resolve_receipts(
            _locked_receipts_of_instance(receipt),
            actor=actor,
            resolution=WorkflowCallback.Resolution.DISMISSED,
            reason=reason,
        )
