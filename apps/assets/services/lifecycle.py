"""An asset's own life: created, renamed, asked for, decided by a person, retired or
deleted.

Every move goes through Asset.TRANSITIONS (a conditional UPDATE on the statuses that may
move to the new one), so concurrent requests change an asset at most once and the
losers learn it, instead of a read-then-write race deciding twice.
"""

from __future__ import annotations

import uuid

from django.utils import timezone

from apps.assets.codes import AssetCode
from apps.assets.models import Asset
from apps.assets.services.events import emit_asset_event
from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.enqueue import enqueue_on_commit
from apps.core.errors import InvalidTransition, ValidationFailed
from apps.core.scope import tenant_scope
from apps.tenancy.audit import audit_record


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


def _transition(asset: Asset, *, status: str, **changes) -> Asset:
    """Move the asset (Asset.TRANSITIONS.move), refused in the words its clients know."""
    needs = " or ".join(sorted(Asset.TRANSITIONS.sources(status)))
    return Asset.TRANSITIONS.move(
        asset,
        status,
        detail=lambda found: f"The asset is {found}; this needs it {needs}.",
        updated_at=timezone.now(),
        **changes,
    )


def asset_update(
    *, actor: Actor, asset: Asset, name: str | None = None, description: str | None = None
) -> Asset:
    """Rename or re-describe an asset, in any status but Requested (Asset.FROZEN): a
    decider is looking at it as it was asked for."""
    changes = {
        field: value
        for field, value in (("name", name), ("description", description))
        if value is not None and value != getattr(asset, field)
    }
    candidate = Asset(**{**{f: getattr(asset, f) for f in ("name", "description")}, **changes})
    candidate.full_clean(exclude=[f.name for f in Asset._meta.fields if f.name not in changes])
    with tenant_scope(asset.tenant_id):
        before = {field: getattr(asset, field) for field in changes}
        # Conditional on the status, like a transition: a request made meanwhile wins.
        updated = (
            Asset.objects.filter(pk=asset.pk)
            .exclude(status__in=Asset.FROZEN)
            .update(updated_at=timezone.now(), **changes)
        )
        asset.refresh_from_db()
        if not updated:
            raise InvalidTransition(
                "The asset is requested: its name and description change once it is decided.",
                code=AssetCode.AWAITING_DECISION,
                status=asset.status,
            )
        if changes:
            audit_record(
                actor=actor,
                action="asset.update",
                instance=asset,
                tenant=asset.tenant_id,
                changes={field: [before[field], changes[field]] for field in changes},
            )
    return asset


def asset_delete(*, actor: Actor, asset: Asset) -> None:
    """Delete a Draft (Asset.DELETABLE); anything once asked for keeps its history."""
    with tenant_scope(asset.tenant_id):
        deleted = Asset.TRANSITIONS.delete(
            asset,
            detail=lambda found: f"The asset is {found}; only a draft can be deleted.",
            code=AssetCode.NOT_DELETABLE,
        )
        audit_record(
            actor=actor,
            action="asset.delete",
            instance=deleted,
            tenant=deleted.tenant_id,
            changes={"status": [deleted.status, None], "name": [deleted.name, None]},
        )
        emit_asset_event(deleted, "AssetDeleted")


def asset_retire(*, actor: Actor, asset: Asset, reason: str) -> Asset:
    """Approved (or Requested: the request withdrawn) → Retired; the reason is required
    and shown as the status reason. A withdrawn request's late callback decides nothing."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationFailed("Say why the asset is retired.", code=CoreCode.REASON_REQUIRED)
    with tenant_scope(asset.tenant_id):
        before = asset.status
        asset = _transition(asset, status=Asset.Status.RETIRED, status_reason=reason)
        audit_record(
            actor=actor,
            action="asset.retire",
            instance=asset,
            tenant=asset.tenant_id,
            changes={"status": [before, asset.status], "status_reason": ["", reason]},
        )
        emit_asset_event(asset, "AssetRetired", reason=reason)
    return asset


def asset_request_approval(*, actor: Actor, asset: Asset, delegate: bool) -> Asset:
    """Draft (or rejected) → Requested. With `delegate`, the Workflow Service will be
    asked to decide; the request's id becomes the start call's idempotency key.

    The previous workflow instance stays on the row (the link back to what decided the
    last request) until a new delegation replaces it, marked stale: the asset no
    longer waits on it, and its late callbacks decide nothing."""
    with tenant_scope(asset.tenant_id):
        before = asset.status
        asset = _transition(
            asset,
            status=Asset.Status.REQUESTED,
            approval_request_id=uuid.uuid4(),
            decided_at=None,
            decided_by="",
            decision_reason="",
            delegation_failure="",
            status_reason="",
            workflow_link_stale=True,
        )
        audit_record(
            actor=actor,
            action="asset.request_approval",
            instance=asset,
            tenant=asset.tenant_id,
            changes={
                "status": [before, asset.status],
                "delegated": [None, delegate],
                "approval_request_id": [None, str(asset.approval_request_id)],
            },
        )
        emit_asset_event(
            asset,
            "AssetApprovalRequested",
            delegated=delegate,
            approval_request_id=str(asset.approval_request_id),
        )
        if delegate:
            enqueue_on_commit("assets.delegate_approval", asset_id=str(asset.pk))
    return asset


def asset_decide(*, actor: Actor, asset: Asset, approve: bool, reason: str = "") -> Asset:
    """A person's decision. Not for a workflow-managed asset: its workflow decides."""
    with tenant_scope(asset.tenant_id):
        if Asset.objects.filter(pk=asset.pk).workflow_managed().exists():
            # Not the table's refusal: who decides it, whatever its status.
            raise InvalidTransition(
                "The Workflow Service decides this asset.", code=AssetCode.WORKFLOW_MANAGED
            )
        status = Asset.Status.APPROVED if approve else Asset.Status.REJECTED
        asset = _transition(
            asset,
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
        emit_asset_event(asset, "AssetApproved" if approve else "AssetRejected", reason=reason)
    return asset
