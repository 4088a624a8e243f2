"""Approval delegated to the Workflow Service: the start call, the instance it answers
with (or the failure), a person's way out of a failed one, and the sweep behind starts
that were lost."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.assets import workflow
from apps.assets.codes import AssetCode
from apps.assets.models import ONE_LIVE_LINK, Asset
from apps.assets.services.events import emit_asset_event
from apps.assets.services.lifecycle import asset_decide
from apps.core.context import Actor
from apps.core.enqueue import enqueue_on_commit, send_task
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import owner_scope, system_scope, tenant_scope
from apps.eventing.effects import perform_effect
from apps.eventing.models import UncertainEffect
from apps.tenancy.audit import audit_record
from apps.tenancy.models import AuditEvent

logger = logging.getLogger(__name__)


def delegation_pending(asset: Asset) -> bool:
    """Requested, and the current request has neither an instance nor a failure yet."""
    return (
        asset.status == Asset.Status.REQUESTED
        and asset.approval_request_id is not None
        and (asset.workflow_instance_id is None or asset.workflow_link_stale)
        and not asset.delegation_failure
    )


def asset_delegate(*, asset_id) -> str:
    """Ask the Workflow Service to decide a Requested asset, and keep the instance id.

    The call is an uncertain effect keyed by the approval request: answered, the id is
    stored at once; unanswered, the reconciler finds the instance by that key later;
    refused (or failed for good), the asset says so and waits on a person.
    """
    with system_scope():
        asset = Asset.objects.filter(pk=asset_id).first()
    if asset is None or not delegation_pending(asset):
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
    elif effect.state == effect.State.FAILED:
        record_failed_start(effect)
    return effect.state


def asset_of_start(effect) -> Asset | None:
    """The asset whose current request a start effect is for, if any."""
    with owner_scope(effect.tenant_id):
        return Asset.objects.filter(approval_request_id=effect.external_ref).first()


def record_started_instance(effect) -> bool:
    """Store the instance a settled start effect reports on the asset it started for."""
    asset = asset_of_start(effect)
    if asset is None:
        return False
    return asset_record_delegation(
        asset=asset,
        approval_request_id=asset.approval_request_id,
        workflow_instance_id=uuid.UUID(effect.result["instance_id"]),
    )


def record_failed_start(effect) -> bool:
    """Make a start that failed for good the asset's visible state."""
    asset = asset_of_start(effect)
    if asset is None:
        return False
    refused = effect.last_error.startswith(workflow.WorkflowServiceRefused.__name__)
    return asset_record_delegation_failure(
        asset=asset,
        approval_request_id=asset.approval_request_id,
        failure=Asset.DelegationFailure.REFUSED if refused else Asset.DelegationFailure.FAILED,
        reason=effect.last_error or "the start failed",
    )


def _update_undelegated_request(
    asset: Asset, approval_request_id: uuid.UUID, *, only_if: dict | None = None, **changes
) -> int:
    """UPDATE the asset while this request is still current and Requested with no
    instance started for it yet, so a retried or late start cannot overwrite one."""
    return (
        Asset.objects.filter(
            pk=asset.pk,
            status=Asset.Status.REQUESTED,
            approval_request_id=approval_request_id,
            **(only_if or {}),
        )
        .undelegated()
        .update(updated_at=timezone.now(), **changes)
    )


def asset_record_delegation(
    *, asset: Asset, approval_request_id: uuid.UUID, workflow_instance_id: uuid.UUID
) -> bool:
    """Store the workflow instance that decides this request, replacing the previous
    request's. Conditional on the same request still waiting without one, so a retried
    or late start cannot overwrite it. The instance id goes to the audit trail."""
    with tenant_scope(asset.tenant_id):
        previous = (
            Asset.objects.filter(pk=asset.pk).values_list("workflow_instance_id", flat=True).first()
        )
        try:
            with transaction.atomic():
                updated = _update_undelegated_request(
                    asset,
                    approval_request_id,
                    workflow_instance_id=workflow_instance_id,
                    workflow_link_stale=False,
                    delegation_failure="",
                    status_reason="",
                )
        except IntegrityError as exc:
            if getattr(exc.__cause__, "diag", None) is None or (
                exc.__cause__.diag.constraint_name != ONE_LIVE_LINK
            ):
                raise
            # The Workflow Service answered with an instance another asset waits on: a
            # fault on its side that a person must look at, never a second link.
            asset_record_delegation_failure(
                asset=asset,
                approval_request_id=approval_request_id,
                failure=Asset.DelegationFailure.FAILED,
                reason=f"The Workflow Service answered with instance {workflow_instance_id}, "
                "which another asset already waits on.",
            )
            return False
        if updated:
            asset.refresh_from_db()
            audit_record(
                actor=None,
                action="asset.delegate",
                instance=asset,
                tenant=asset.tenant_id,
                changes={
                    "workflow_instance_id": [
                        str(previous) if previous else None,
                        str(workflow_instance_id),
                    ],
                    "approval_request_id": [None, str(approval_request_id)],
                },
            )
            emit_asset_event(
                asset, "AssetApprovalDelegated", workflow_instance_id=str(workflow_instance_id)
            )
    return bool(updated)


def asset_record_delegation_failure(
    *, asset: Asset, approval_request_id: uuid.UUID, failure: str, reason: str
) -> bool:
    """The current request's delegation was refused or failed: the asset says why
    (its status reason), AssetDelegationFailed announces it, and it waits on a person
    (selectors.delegations_needing_attention). Conditional like asset_record_delegation."""
    with tenant_scope(asset.tenant_id):
        updated = _update_undelegated_request(
            asset,
            approval_request_id,
            only_if={"delegation_failure": ""},
            delegation_failure=failure,
            status_reason=reason,
        )
        if updated:
            asset.refresh_from_db()
            audit_record(
                actor=None,
                action="asset.delegation_failed",
                instance=asset,
                tenant=asset.tenant_id,
                changes={
                    "delegation_failure": ["", failure],
                    "status_reason": ["", reason],
                    "approval_request_id": [None, str(approval_request_id)],
                },
            )
            emit_asset_event(
                asset,
                "AssetDelegationFailed",
                failure=failure,
                reason=reason,
                approval_request_id=str(approval_request_id),
            )
    return bool(updated)


def _locked_failed_delegation(asset: Asset) -> Asset:
    """The asset, locked, if its current delegation is refused or failed; else 409."""
    locked = Asset.objects.select_for_update().filter(pk=asset.pk).delegation_failed().first()
    if locked is None:
        asset.refresh_from_db()
        raise Conflict(
            "The asset's delegation has not failed: there is nothing to retry or decide.",
            code=AssetCode.DELEGATION_NOT_FAILED,
            status=asset.status,
        )
    return locked


def delegation_retry(*, asset: Asset, actor: Actor) -> Asset:
    """Delegate a refused or failed request again, as a new approval request: the
    failed start holds no instance on the other side, so a new key is safe, and the
    old one's record stays as history."""
    with tenant_scope(asset.tenant_id):
        locked = _locked_failed_delegation(asset)
        failure, reason = locked.delegation_failure, locked.status_reason
        new_request = uuid.uuid4()
        Asset.objects.filter(pk=locked.pk).update(
            approval_request_id=new_request,
            delegation_failure="",
            status_reason="",
            updated_at=timezone.now(),
        )
        _delegated_again(
            locked,
            actor=actor,
            action="asset.delegation_retry",
            changes={
                "delegation_failure": [failure, ""],
                "status_reason": [reason, ""],
                "approval_request_id": [str(asset.approval_request_id), str(new_request)],
            },
        )
    return locked


def _delegated_again(asset: Asset, *, actor: Actor, action: str, changes: dict) -> None:
    """After the asset was given a new approval request: audited, announced as asked for
    again, and its delegation sent once the transaction commits."""
    asset.refresh_from_db()
    audit_record(
        actor=actor, action=action, instance=asset, tenant=asset.tenant_id, changes=changes
    )
    emit_asset_event(
        asset,
        "AssetApprovalRequested",
        delegated=True,
        approval_request_id=str(asset.approval_request_id),
        retried=True,
    )
    enqueue_on_commit("assets.delegate_approval", asset_id=str(asset.pk))


def delegation_rerequest(*, asset: Asset, actor: Actor) -> Asset:
    """Delegate again a request whose decision never came (attention kind
    overdue-decision), as a new approval request: a new start key, so a new instance.
    The old instance stays on the row as a stale link until the new one is recorded;
    its late callbacks decide nothing (apply_pending_callbacks needs a live link). The
    Workflow Service is not asked to cancel it: Steward never changes its instances."""
    with tenant_scope(asset.tenant_id):
        new_request = uuid.uuid4()
        # Conditional, as a move is: a decision arriving meanwhile wins.
        updated = (
            Asset.objects.filter(pk=asset.pk)
            .workflow_managed()
            .update(
                approval_request_id=new_request,
                workflow_link_stale=True,
                updated_at=timezone.now(),
            )
        )
        if not updated:
            raise Conflict(
                "The asset does not wait on the Workflow Service.",
                code=AssetCode.NOT_WAITING_ON_WORKFLOW,
            )
        _delegated_again(
            asset,
            actor=actor,
            action="asset.delegation_rerequest",
            changes={
                "approval_request_id": [str(asset.approval_request_id), str(new_request)],
                "workflow_link_stale": [False, True],
            },
        )
    return asset


DELEGATION_DECISIONS = {"approved": True, "rejected": False}


def delegation_decide(*, asset: Asset, actor: Actor, decision: str, reason: str = "") -> Asset:
    """A person decides a request whose delegation was refused or failed."""
    if decision not in DELEGATION_DECISIONS:
        raise ValidationFailed(
            "The decision is approved or rejected.",
            code=AssetCode.INVALID_DECISION,
            decision=decision,
        )
    with tenant_scope(asset.tenant_id):
        locked = _locked_failed_delegation(asset)
        failure = locked.delegation_failure
        decided = asset_decide(
            actor=actor, asset=locked, approve=DELEGATION_DECISIONS[decision], reason=reason
        )
        Asset.objects.filter(pk=decided.pk).update(delegation_failure="")
        decided.refresh_from_db()
        audit_record(
            actor=actor,
            action="asset.delegation_decided",
            instance=decided,
            tenant=decided.tenant_id,
            changes={"delegation_failure": [failure, ""], "decision": [None, decision]},
        )
    return decided


def resume_lost_delegations(*, older_than: timedelta | None = None) -> int:
    """The sweep behind lost delegations: a delegated asset still Requested without an
    instance, untouched for a while, whose start was never made — its task died with a
    worker (held until the broker's visibility timeout, twenty minutes) or never reached
    the broker — is delegated again. A start already made is the reconciler's (its
    effect record says so); only a record left pending by a dead worker goes again.
    Delegating twice is safe: the start is keyed by the approval request."""
    if older_than is None:
        older_than = timedelta(seconds=settings.STEWARD_STALLED_WORK_SECONDS)
    cutoff = timezone.now() - older_than
    with system_scope():
        # Assets a person decides wait the same way; which were delegated is read in
        # chunks below, so however many of those there are, none is left unseen.
        waiting = list(
            Asset.objects.filter(
                status=Asset.Status.REQUESTED,
                approval_request_id__isnull=False,
                delegation_failure="",
                updated_at__lt=cutoff,
            )
            # No instance for the current request yet (one may be left from the last).
            .undelegated()
            .values_list("approval_request_id", "pk")
        )
    lost, settled = [], []
    for start in range(0, len(waiting), 1000):
        chunk = dict(waiting[start : start + 1000])
        lost += _delegations_never_started(chunk, cutoff)
        settled += _starts_settled_unrecorded(chunk)
    for asset_id in lost:
        logger.warning("asset %s: its delegation was lost; delegating again", asset_id)
        send_task("assets.delegate_approval", asset_id=str(asset_id))
    for effect in settled:
        # A worker settled the start, then died (or lost its database) before storing
        # the instance on the asset: nothing else would, and the Workflow Service's
        # callbacks for that instance would be refused as unknown.
        logger.warning("start %s: settled but not recorded on its asset; recording", effect.pk)
        if effect.state == UncertainEffect.State.SUCCEEDED:
            record_started_instance(effect)
        else:
            record_failed_start(effect)
    return len(lost)


def _starts_settled_unrecorded(waiting: dict) -> list:
    """Of {approval request id: asset id} (each still waiting without an instance or a
    failure), the start effects already settled for good: their outcome is the asset's
    to record (record_started_instance and record_failed_start are conditional, so a
    worker recording the same outcome meanwhile changes nothing)."""
    with system_scope():
        return list(
            UncertainEffect.objects.filter(
                target_system=workflow.TARGET,
                operation=workflow.START,
                external_ref__in=[str(k) for k in waiting],
                state__in=(UncertainEffect.State.SUCCEEDED, UncertainEffect.State.FAILED),
            )
        )


def _delegations_never_started(waiting: dict, cutoff) -> list:
    """Of {approval request id: asset id}, the assets whose current request was
    delegated and whose start has no record (or one a dead worker left pending)."""
    with system_scope():
        # Whether the current request was delegated is written on its audit entry.
        latest = (
            AuditEvent.objects.filter(
                action="asset.request_approval", object_id__in=[str(a) for a in waiting.values()]
            )
            .order_by("object_id", "-occurred_at", "-id")
            .distinct("object_id")
            .values_list("object_id", "changes")
        )
        delegated = {
            object_id for object_id, changes in latest if (changes.get("delegated") or [0, 0])[1]
        }
        started = set(
            UncertainEffect.objects.filter(
                target_system=workflow.TARGET,
                operation=workflow.START,
                external_ref__in=[str(k) for k in waiting],
            )
            .exclude(state=UncertainEffect.State.PENDING, updated_at__lt=cutoff)
            .values_list("external_ref", flat=True)
        )
    return [
        asset_id
        for key, asset_id in waiting.items()
        if str(asset_id) in delegated and str(key) not in started
    ]
