"""Asset approval: by a person, or delegated to the Workflow Service.

Every transition is a conditional UPDATE on the statuses `Asset.TRANSITIONS` lets
move to the new one, so concurrent requests (two operators, fifty duplicate callbacks)
change an asset at most once and the losers learn it, instead of a read-then-write race
deciding twice.
"""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.assets import workflow
from apps.assets.models import Asset, WorkflowCallback
from apps.core.context import Actor
from apps.core.enqueue import enqueue_on_commit, send_task
from apps.core.errors import Conflict, InvalidTransition, ValidationFailed
from apps.core.kick import kick
from apps.core.outbox import NewEvent, emit_many
from apps.core.scope import owner_scope, system_scope, tenant_scope
from apps.eventing.effects import perform_effect
from apps.eventing.models import UncertainEffect
from apps.eventing.services import aggregate_lock_key
from apps.tenancy.audit import audit_record
from apps.tenancy.models import AuditEvent

TOPIC = "assets.asset"
logger = logging.getLogger(__name__)


def _asset_event(tenant_id, asset_id, status: str, event_type: str, **payload) -> NewEvent:
    """An asset event: the asset, its status now, and what else the event says."""
    return NewEvent(
        tenant=tenant_id,
        topic=TOPIC,
        event_type=event_type,
        aggregate_type="asset",
        aggregate_id=str(asset_id),
        payload={"asset_id": str(asset_id), "status": status, **payload},
    )


def _emit_asset_event(asset: Asset, event_type: str, **payload) -> None:
    emit_many([_asset_event(asset.tenant_id, asset.pk, asset.status, event_type, **payload)])


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
    """UPDATE … SET status WHERE status IN (the statuses that may move to it);
    InvalidTransition when the asset had moved on."""
    expect = Asset.TRANSITIONS.sources(status)
    updated = Asset.objects.filter(pk=asset.pk, status__in=expect).update(
        status=status, updated_at=timezone.now(), **changes
    )
    if not updated:
        asset.refresh_from_db()
        raise InvalidTransition(
            f"The asset is {asset.status}; this needs it {' or '.join(sorted(expect))}.",
            status=asset.status,
        )
    asset.refresh_from_db()
    return asset


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
                code="asset_awaiting_decision",
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
        locked = (
            Asset.objects.select_for_update()
            .filter(pk=asset.pk, status__in=Asset.DELETABLE)
            .first()
        )
        if locked is None:
            asset.refresh_from_db()
            raise InvalidTransition(
                f"The asset is {asset.status}; only a draft can be deleted.",
                code="asset_not_deletable",
                status=asset.status,
            )
        audit_record(
            actor=actor,
            action="asset.delete",
            instance=locked,
            tenant=locked.tenant_id,
            changes={"status": [locked.status, None], "name": [locked.name, None]},
        )
        locked.delete()
        _emit_asset_event(asset, "AssetDeleted")


def asset_retire(*, actor: Actor, asset: Asset, reason: str) -> Asset:
    """Approved → Retired; the reason is required and shown as the status reason."""
    reason = (reason or "").strip()
    if not reason:
        raise ValidationFailed("Say why the asset is retired.", code="reason_required")
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
        _emit_asset_event(asset, "AssetRetired", reason=reason)
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
        _emit_asset_event(
            asset,
            "AssetApprovalRequested",
            delegated=delegate,
            approval_request_id=str(asset.approval_request_id),
        )
        if delegate:
            enqueue_on_commit("assets.delegate_approval", asset_id=str(asset.pk))
    return asset


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
        updated = _update_undelegated_request(
            asset,
            approval_request_id,
            workflow_instance_id=workflow_instance_id,
            workflow_link_stale=False,
            delegation_failure="",
            status_reason="",
        )
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
            _emit_asset_event(
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
            _emit_asset_event(
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
            code="delegation_not_failed",
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
        locked.refresh_from_db()
        audit_record(
            actor=actor,
            action="asset.delegation_retry",
            instance=locked,
            tenant=locked.tenant_id,
            changes={
                "delegation_failure": [failure, ""],
                "status_reason": [reason, ""],
                "approval_request_id": [str(asset.approval_request_id), str(new_request)],
            },
        )
        _emit_asset_event(
            locked,
            "AssetApprovalRequested",
            delegated=True,
            approval_request_id=str(new_request),
            retried=True,
        )
        enqueue_on_commit("assets.delegate_approval", asset_id=str(locked.pk))
    return locked


DELEGATION_DECISIONS = {"approved": True, "rejected": False}


def delegation_decide(*, asset: Asset, actor: Actor, decision: str, reason: str = "") -> Asset:
    """A person decides a request whose delegation was refused or failed."""
    if decision not in DELEGATION_DECISIONS:
        raise ValidationFailed(
            "The decision is approved or rejected.", code="invalid_decision", decision=decision
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
        _emit_asset_event(asset, "AssetApproved" if approve else "AssetRejected", reason=reason)
    return asset


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
        # Found by the chaos drill: the worker settled the start, then died (or lost its
        # database) before storing the instance on the asset; nothing else would, and
        # the Workflow Service's callbacks for that instance were refused as unknown.
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


# --------------------------------------------------------------------------- callbacks


@dataclass(frozen=True)
class Receipt:
    id: int
    tenant_id: uuid.UUID | None  # None: no asset knows the instance

    @property
    def known(self) -> bool:
        return self.tenant_id is not None


def callback_receive(
    *, workflow_instance_id: uuid.UUID, approve: bool, reason: str, callback_id: str
) -> Receipt:
    """Record a verified callback and kick its tenant's worker; the receipt is the queue.

    A callback for an instance Steward does not know is recorded too (for operators)
    and answered as such; nothing else changes. One statement does the look-up and the
    insert under row-level security (migration 0006): this is every callback's path.
    Not to be called inside a tenant's scope.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT receipt, tenant FROM steward_record_workflow_callback(%s, %s, %s, %s)",
            [workflow_instance_id, "approve" if approve else "reject", reason, callback_id],
        )
        receipt = Receipt(*cursor.fetchone())
    if not receipt.known:
        # It waits on a person now (selectors.unknown_instance_callbacks): say so, for
        # whatever pages or chats about the attention queue. Platform-wide, as it is.
        with system_scope():
            emit_many(
                [
                    NewEvent(
                        tenant=None,
                        topic=TOPIC,
                        event_type="WorkflowCallbackUnknownInstance",
                        aggregate_type="workflow_callback",
                        aggregate_id=str(receipt.id),
                        payload={
                            "receipt": receipt.id,
                            "workflow_instance_id": str(workflow_instance_id),
                            "decision": "approve" if approve else "reject",
                        },
                    )
                ]
            )
    if receipt.known:
        # Immediately when the statement was its own transaction (the endpoint's case).
        transaction.on_commit(lambda: kick_callback_worker(receipt.tenant_id), robust=True)
    return receipt


def callback_kick_key(tenant_id) -> str:
    return f"steward:assets:callbacks:kick:{tenant_id}"


def kick_callback_worker(tenant_id) -> None:
    kick(
        "assets.apply_workflow_callbacks",
        callback_kick_key(tenant_id),
        kwargs={"tenant_id": str(tenant_id)},
        # A busy endpoint records hundreds of a tenant's callbacks a second: one kick
        # per process and a fraction of a second asks Redis for all of them.
        coalesce_ms=settings.STEWARD_WORKFLOW_CALLBACK_KICK_COALESCE_MS,
    )


RECEIPT = WorkflowCallback._meta.db_table
ASSET = Asset._meta.db_table
AUDIT = AuditEvent._meta.db_table
DECIDED = {"approve": Asset.Status.APPROVED, "reject": Asset.Status.REJECTED}
# The status a decision moves an asset from, read from Asset.TRANSITIONS for the
# callbacks' conditional UPDATE below. Should the table ever let a decision start from
# more than one status, which that statement cannot express, this fails at import.
(DECIDED_FROM,) = {
    source for status in DECIDED.values() for source in Asset.TRANSITIONS.sources(status)
}

# One statement decides every candidate of a batch: the conditional UPDATE (still
# Requested under this instance) and, for the rows it changed, their audit events.
APPLY_DECISIONS = f"""
WITH decision AS (
    SELECT * FROM jsonb_to_recordset(%s::jsonb)
        AS d(receipt bigint, instance uuid, status text, reason text)
), applied AS (
    UPDATE {ASSET} AS a
    SET status = d.status, decided_at = now(), decided_by = 'workflow-service',
        decision_reason = d.reason, updated_at = now()
    FROM decision AS d
    WHERE a.workflow_instance_id = d.instance AND a.status = '{DECIDED_FROM}'
      AND NOT a.workflow_link_stale
    RETURNING a.id, a.tenant_id, a.name, a.status, d.receipt
), audit AS (
    INSERT INTO {AUDIT} (occurred_at, tenant_id, actor_label, action, object_type,
        object_id, object_repr, changes, request_id)
    SELECT now(), tenant_id, 'workflow-service', 'asset.' || status, 'assets.asset',
        id::text, left(name, 200),
        jsonb_build_object('status', jsonb_build_array('{DECIDED_FROM}', status),
                           'decided_by', jsonb_build_array(NULL, 'workflow-service'),
                           'callback', jsonb_build_array(NULL, receipt)),
        ''
    FROM applied
)
SELECT receipt, id::text, status FROM applied
"""  # noqa: S608 - table names only

RECORD_OUTCOMES = f"""
UPDATE {RECEIPT} AS r SET outcome = o.outcome, applied_at = now()
FROM unnest(%s::bigint[], %s::text[]) AS o(id, outcome)
WHERE r.id = o.id
"""  # noqa: S608 - table name only


def apply_pending_callbacks(tenant_id, *, limit: int | None = None) -> int | None:
    """Apply one batch of a tenant's pending callbacks, each decision at most once.

    Every asset's change is conditional on it still being Requested under the
    callback's instance, so of any number of duplicates, concurrent or late, exactly
    one decides and announces it; the rest are acknowledged (WorkflowCallbackIgnored)
    and change nothing. The reference stays on the row. Every receipt records its
    outcome in the same transaction. One worker at a time takes a tenant (a try-lock),
    so batches never wait on each other's rows; returns None when another holds it,
    else how many callbacks were settled.
    """
    limit = limit or settings.STEWARD_WORKFLOW_CALLBACK_BATCH
    with tenant_scope(tenant_id), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_try_advisory_xact_lock(%s)",
            [aggregate_lock_key("assets.callbacks", str(tenant_id))],
        )
        if not cursor.fetchone()[0]:
            return None
        cursor.execute(
            f"SELECT id, workflow_instance_id::text, decision, reason FROM {RECEIPT}"  # noqa: S608
            " WHERE tenant_id = %s AND outcome = 'pending' ORDER BY id LIMIT %s",
            [tenant_id, limit],
        )
        claimed = cursor.fetchall()
        if not claimed:
            return 0
        # Only the earliest callback per instance can decide; a later one in the same
        # batch finds the decision made, like a later batch would.
        candidates: dict = {}
        for receipt_id, instance, decision, reason in claimed:
            candidates.setdefault(instance, (receipt_id, decision, reason))
        cursor.execute(
            APPLY_DECISIONS,
            [
                json.dumps(
                    [
                        {
                            "receipt": receipt_id,
                            "instance": instance,
                            "status": DECIDED[decision],
                            "reason": reason,
                        }
                        for instance, (receipt_id, decision, reason) in candidates.items()
                    ]
                )
            ],
        )
        applied = {receipt: (asset_id, status) for receipt, asset_id, status in cursor.fetchall()}
        undecided = list({row[1] for row in claimed if row[0] not in applied})
        current: dict = {}
        if undecided:
            cursor.execute(
                f"SELECT workflow_instance_id::text, id::text, status FROM {ASSET}"  # noqa: S608
                " WHERE workflow_instance_id = ANY(%s::uuid[])",
                [undecided],
            )
            current = {instance: (asset_id, status) for instance, asset_id, status in cursor}
        events, outcomes = [], []
        for receipt_id, instance, decision, reason in claimed:
            if receipt_id in applied:
                asset_id, status = applied[receipt_id]
                event_type = "AssetApproved" if status == Asset.Status.APPROVED else "AssetRejected"
                events.append(
                    _asset_event(
                        tenant_id,
                        asset_id,
                        status,
                        event_type,
                        workflow_instance_id=instance,
                        reason=reason,
                    )
                )
                outcomes.append(WorkflowCallback.Outcome.APPLIED)
            elif instance in current:
                asset_id, status = current[instance]
                events.append(
                    _asset_event(
                        tenant_id,
                        asset_id,
                        status,
                        "WorkflowCallbackIgnored",
                        workflow_instance_id=instance,
                        decision=decision,
                    )
                )
                outcomes.append(WorkflowCallback.Outcome.IGNORED)
            else:  # the asset is gone since the callback came
                outcomes.append(WorkflowCallback.Outcome.UNKNOWN_INSTANCE)
        if events:
            emit_many(events)
        cursor.execute(RECORD_OUTCOMES, [[row[0] for row in claimed], outcomes])
    return len(claimed)


def has_pending_callbacks(tenant_id) -> bool:
    with tenant_scope(tenant_id):
        return WorkflowCallback.objects.filter(
            tenant_id=tenant_id, outcome=WorkflowCallback.Outcome.PENDING
        ).exists()


def drain_callbacks(tenant_id) -> int:
    """Apply a tenant's callbacks until none is pending or another worker has the tenant.

    After an empty batch it looks once more without the lock: a callback committed
    while this worker held the tenant, whose own kick found the tenant taken, is
    picked up here instead of waiting for the sweep.
    """
    total = 0
    while True:
        settled = apply_pending_callbacks(tenant_id)
        if settled is None:
            return total
        total += settled
        if settled == 0 and not has_pending_callbacks(tenant_id):
            return total


def drain_all_callbacks() -> int:
    """The sweep behind lost kicks: every tenant with pending callbacks, in turn."""
    with system_scope():
        tenants = list(
            WorkflowCallback.objects.filter(outcome=WorkflowCallback.Outcome.PENDING)
            .values_list("tenant_id", flat=True)
            .distinct()
        )
    return sum(drain_callbacks(tenant_id) for tenant_id in tenants)


# --------------------------------------------------------------------------- unknown callbacks


def _locked_unknown_receipt(receipt: WorkflowCallback) -> WorkflowCallback:
    """The receipt, locked in its owner's scope, if it names an unknown instance and
    nobody has resolved it yet; 409 otherwise."""
    with owner_scope(receipt.tenant_id):
        locked = WorkflowCallback.objects.select_for_update().get(pk=receipt.pk)
    if locked.outcome != WorkflowCallback.Outcome.UNKNOWN_INSTANCE:
        raise Conflict(
            "The callback's instance was known: it needs no one.", code="callback_not_unknown"
        )
    if locked.resolution:
        raise Conflict(
            f"The callback was {locked.resolution} already.",
            code="callback_already_resolved",
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
                "The callback came for another tenant's asset.", code="callback_tenant_mismatch"
            )
        instance = original.workflow_instance_id
        with tenant_scope(asset.tenant_id):
            asset = Asset.objects.select_for_update().get(pk=asset.pk)
            if asset.status == Asset.Status.DRAFT:
                raise Conflict(
                    "The asset was never requested: no workflow decides it.",
                    code="asset_not_requested",
                    status=asset.status,
                )
            pending = delegation_pending(asset)
            if asset.is_workflow_managed or (
                asset.status == Asset.Status.REQUESTED and not pending
            ):
                raise Conflict(
                    "The asset waits on another workflow instance.",
                    code="callback_instance_mismatch",
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
        raise ValidationFailed("Say why the callback is dismissed.", code="reason_required")
    with transaction.atomic():
        original = _locked_unknown_receipt(receipt)
        return _resolve_receipt(
            original,
            actor=actor,
            resolution=WorkflowCallback.Resolution.DISMISSED,
            reason=reason,
        )


# --------------------------------------------------------------------------- reconciliation


def reconcile_stale_delegations(*, limit: int = 100) -> dict[str, int]:
    """Ask the Workflow Service about assets Requested under a workflow for too long.

    Opt-in (its schedule is installed disabled). A final decision the service reports
    is recorded and applied exactly as a callback would be; an instance it does not know is flagged
    in the asset's history and the log, and left for a person. Running instances are
    left alone. It never starts, cancels or changes anything on the other side.
    """
    cutoff = timezone.now() - timedelta(minutes=settings.STEWARD_WORKFLOW_RECONCILE_AFTER_MINUTES)
    with system_scope():
        stale = list(Asset.objects.workflow_managed().filter(updated_at__lt=cutoff)[:limit])
    client = workflow.WorkflowServiceClient()
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
            # Recorded and applied like a callback, so the asset's receipts show it.
            callback_receive(
                workflow_instance_id=asset.workflow_instance_id,
                approve=state["decision"] == "approve",
                reason=state.get("reason", "") or "reported by the reconciler",
                callback_id=f"reconciler:{asset.workflow_instance_id}",
            )
            drain_callbacks(asset.tenant_id)
            counts["applied"] += 1
        else:
            counts["running"] += 1
    return counts
