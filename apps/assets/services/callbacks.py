"""The Workflow Service's decisions: each callback recorded as a receipt (the queue), and
a worker per tenant applying them in batches, each decision at most once."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.assets import workflow
from apps.assets.models import Asset, WorkflowCallback
from apps.assets.services.events import TOPIC, asset_event
from apps.core.context import Actor
from apps.core.kick import kick
from apps.core.outbox import NewEvent, emit_many
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.services import aggregate_lock_key
from apps.tenancy.audit import Moved, audit_moved


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


@dataclass(frozen=True)
class _WorkflowService(Actor):
    """The Workflow Service, as the audit trail names it when its callback decided."""

    @property
    def label(self) -> str:
        return workflow.TARGET


WORKFLOW_SERVICE = _WorkflowService()
DECIDED = {"approve": Asset.Status.APPROVED, "reject": Asset.Status.REJECTED}
ANNOUNCED = {Asset.Status.APPROVED: "AssetApproved", Asset.Status.REJECTED: "AssetRejected"}
RECEIPT = WorkflowCallback._meta.db_table

CLAIM_PENDING = f"""
SELECT id, workflow_instance_id::text, decision, reason FROM {RECEIPT}
WHERE tenant_id = %s AND outcome = 'pending' ORDER BY id LIMIT %s
"""  # noqa: S608 - table name only

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
        cursor.execute(CLAIM_PENDING, [tenant_id, limit])
        claimed = cursor.fetchall()
        if not claimed:
            return 0
        applied = _apply_decisions(claimed)
        events, outcomes = _announce(tenant_id, claimed, applied)
        if events:
            emit_many(events)
        cursor.execute(RECORD_OUTCOMES, [[row[0] for row in claimed], outcomes])
    return len(claimed)


def _apply_decisions(claimed: list) -> dict[int, Asset]:
    """Decide the assets the claimed receipts name and audit each one decided, in one
    statement (Asset.TRANSITIONS.move_many: still Requested, under this very instance,
    its audit rows written over the rows it moved); {receipt id: the asset it decided}."""
    # Only the earliest callback per instance can decide; a later one in the same
    # batch finds the decision made, like a later batch would.
    candidates: dict = {}
    for receipt_id, instance, decision, reason in claimed:
        candidates.setdefault(instance, (receipt_id, decision, reason))
    now = timezone.now()
    decided = Asset.TRANSITIONS.move_many(
        Asset,
        [
            {
                "workflow_instance_id": instance,
                "to": DECIDED[decision],
                "decision_reason": reason,
                "callback": receipt_id,
            }
            for instance, (receipt_id, decision, reason) in candidates.items()
        ],
        by="workflow_instance_id",
        where={"workflow_link_stale": False},
        carry=("callback",),
        then=audit_moved(
            Asset,
            actor=WORKFLOW_SERVICE,
            action="asset.{status}",
            object_repr="{name}",  # as str(asset)
            changes={
                # A workflow decides a Requested asset, as a person does (asset_decide).
                "status": [Asset.Status.REQUESTED, Moved("status")],
                "decided_by": [None, WORKFLOW_SERVICE.label],
                "callback": [None, Moved("callback")],
            },
        ),
        decided_at=now,
        decided_by=WORKFLOW_SERVICE.label,
        updated_at=now,
    )
    return {candidates[str(asset.workflow_instance_id)][0]: asset for asset in decided}


def _announce(tenant_id, claimed: list, applied: dict) -> tuple[list, list]:
    """Each claimed receipt's event and outcome: the decision it applied, an
    acknowledgement that the asset was decided already, or an unknown instance (the
    asset is gone since the callback came)."""
    undecided = {instance for receipt_id, instance, _, _ in claimed if receipt_id not in applied}
    current = _assets_of(undecided) if undecided else {}
    events, outcomes = [], []
    for receipt_id, instance, decision, reason in claimed:
        if receipt_id in applied:
            asset = applied[receipt_id]
            events.append(
                asset_event(
                    tenant_id,
                    asset.pk,
                    asset.status,
                    ANNOUNCED[asset.status],
                    workflow_instance_id=instance,
                    reason=reason,
                )
            )
            outcomes.append(WorkflowCallback.Outcome.APPLIED)
        elif instance in current:
            asset_id, status = current[instance]
            events.append(
                asset_event(
                    tenant_id,
                    asset_id,
                    status,
                    "WorkflowCallbackIgnored",
                    workflow_instance_id=instance,
                    decision=decision,
                )
            )
            outcomes.append(WorkflowCallback.Outcome.IGNORED)
        else:
            outcomes.append(WorkflowCallback.Outcome.UNKNOWN_INSTANCE)
    return events, outcomes


def _assets_of(instances: set) -> dict:
    """{instance: (asset id, status)} of the assets under these workflow instances."""
    found = Asset.objects.filter(workflow_instance_id__in=instances)
    return {
        str(instance): (asset_id, status)
        for instance, asset_id, status in found.values_list("workflow_instance_id", "pk", "status")
    }


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
