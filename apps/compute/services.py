"""Compute batches and the workflow steps that wait on them."""

from __future__ import annotations

import json
import logging
from collections import defaultdict

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.compute.models import BatchCompletion, ComputeBatch, WorkflowBatchLink
from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.errors import Conflict
from apps.core.kick import kick
from apps.core.outbox import NewEvent, emit_many
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.audit import audit_record

logger = logging.getLogger(__name__)

STEP_TOPIC = "compute.step"
POLL_KICK_KEY = "steward:compute:poll:kick"
LINK = WorkflowBatchLink._meta.db_table
BATCH = ComputeBatch._meta.db_table
COMPLETION = BatchCompletion._meta.db_table


def batch_submit(
    *,
    actor: Actor,
    tenant,
    idempotency_key: str,
    workflow_instance_id: str,
    workflow_step_id: str,
) -> tuple[ComputeBatch, bool]:
    """The `submit_compute` step: create the batch and the step's link in one transaction.

    Idempotent by the step's key: the same key again returns the batch it created (and
    False), also when two identical submissions race; the same key for another step
    is a conflict.
    """
    with tenant_scope(tenant):
        existing = ComputeBatch.objects.filter(
            tenant=tenant, idempotency_key=idempotency_key
        ).first()
        if existing is None:
            try:
                with transaction.atomic():
                    return _create_batch(
                        actor=actor,
                        tenant=tenant,
                        idempotency_key=idempotency_key,
                        workflow_instance_id=workflow_instance_id,
                        workflow_step_id=workflow_step_id,
                    ), True
            except IntegrityError:
                # A concurrent submission of the same key won the insert.
                existing = ComputeBatch.objects.get(tenant=tenant, idempotency_key=idempotency_key)
        if (existing.workflow_instance_id, existing.workflow_step_id) != (
            workflow_instance_id,
            workflow_step_id,
        ):
            raise Conflict(
                "This idempotency key was used for another workflow step.",
                code=CoreCode.IDEMPOTENCY_KEY_REUSED,
            )
        return existing, False


def _create_batch(
    *, actor, tenant, idempotency_key, workflow_instance_id, workflow_step_id
) -> ComputeBatch:
    batch = ComputeBatch(
        tenant=tenant,
        idempotency_key=idempotency_key,
        workflow_instance_id=workflow_instance_id,
        workflow_step_id=workflow_step_id,
    )
    _validate(batch)
    batch.save(force_insert=True)
    WorkflowBatchLink.objects.create(
        batch_id=batch.pk,
        workflow_step_id=workflow_step_id,
        workflow_instance_id=workflow_instance_id,
        tenant=tenant,
    )
    audit_record(
        actor=actor,
        action="compute_batch.submit",
        instance=batch,
        tenant=tenant,
        changes={"workflow_step": [None, f"{workflow_instance_id}/{workflow_step_id}"]},
    )
    return batch


def batch_set_status(
    *, actor: Actor, batch: ComputeBatch, status: str, result_summary: dict | None = None
) -> ComputeBatch:
    """A compute worker reports progress. Terminal states are final; reaching one queues
    the waiting step's completion and kicks the poller."""
    with tenant_scope(batch.tenant_id):
        # Read as it is now, locked: a report repeated (or racing its twin) is answered
        # with the batch unchanged, and the audit names the status the batch left.
        batch = ComputeBatch.objects.select_for_update().get(pk=batch.pk)
        if status == batch.status and result_summary in (None, batch.result_summary):
            return batch
        before = batch.status
        now = timezone.now()
        changes: dict = {"updated_at": now}
        if result_summary is not None:
            changes["result_summary"] = result_summary
        terminal = status in ComputeBatch.TERMINAL
        if terminal:
            changes["finished_at"] = now
        for name, value in changes.items():
            setattr(batch, name, value)
        _validate(batch)
        ComputeBatch.TRANSITIONS.move(
            batch,
            status,
            detail=lambda found: f"A {found} batch cannot become {status}.",
            extra=lambda found: {"allowed": sorted(ComputeBatch.TRANSITIONS.targets(found))},
            **changes,
        )
        if terminal:
            BatchCompletion.objects.get_or_create(batch_id=batch.pk, tenant_id=batch.tenant_id)
            transaction.on_commit(kick_poller, robust=True)
        audit_record(
            actor=actor,
            action="compute_batch.status",
            instance=batch,
            tenant=batch.tenant_id,
            changes={"status": [before, status]},
        )
        return batch


def _validate(batch: ComputeBatch) -> None:
    """The batch's own fields. The database guards the tenant and the key's uniqueness:
    a racing submission of the same key must reach batch_submit's IntegrityError path."""
    batch.full_clean(exclude=["tenant"], validate_unique=False, validate_constraints=False)


def kick_poller() -> None:
    kick("compute.poll_batch_links", POLL_KICK_KEY)


def _step_completed(link: tuple, outcome: str, summary: dict) -> NewEvent:
    batch_id, tenant_id, step_id, instance_id = link
    return NewEvent(
        topic=STEP_TOPIC,
        event_type="step_completed",
        # Per workflow instance: its steps complete in the order they are published.
        aggregate_type="workflow_instance",
        aggregate_id=instance_id,
        payload={
            "workflow_instance_id": instance_id,
            "workflow_step_id": step_id,
            "batch_id": str(batch_id),
            "outcome": outcome,
            "result_summary": summary,
        },
        tenant=tenant_id,
    )


def _delete_links(batch_ids: list) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {LINK} WHERE batch_id = ANY(%s)", [batch_ids])  # noqa: S608
        cursor.execute(f"DELETE FROM {COMPLETION} WHERE batch_id = ANY(%s)", [batch_ids])  # noqa: S608


def _complete_waiting_steps(tenant_id, candidates: dict) -> int:
    """In the owning tenant's scope and one transaction: claim the links (SKIP LOCKED, so
    a concurrent poller skips them), write each step_completed, delete the links."""
    with tenant_scope(tenant_id), connection.cursor() as cursor:
        cursor.execute(
            f"SELECT batch_id, tenant_id, workflow_step_id, workflow_instance_id FROM {LINK}"  # noqa: S608
            " WHERE batch_id = ANY(%s) FOR UPDATE SKIP LOCKED",
            [list(candidates)],
        )
        claimed = cursor.fetchall()
        if not claimed:
            return 0
        # In queue order (the order the batches finished): `candidates` keeps it.
        position = {batch_id: n for n, batch_id in enumerate(candidates)}
        claimed.sort(key=lambda link: position[link[0]])
        emit_many([_step_completed(link, *candidates[link[0]]) for link in claimed])
        _delete_links([link[0] for link in claimed])
    return len(claimed)


# LATERAL lookups by primary key (LIMIT 1 keeps the planner from flattening them): it
# would otherwise hash-join the queue against a sequential scan of every batch or link,
# and the poll would cost what is outstanding instead of what is terminal.
POLL_QUERY = f"""
SELECT c.batch_id, c.tenant_id, b.status, b.result_summary, l.linked
FROM (SELECT batch_id, tenant_id, queued_at FROM {COMPLETION} ORDER BY queued_at LIMIT %s) AS c
LEFT JOIN LATERAL (
    SELECT status, result_summary FROM {BATCH} WHERE id = c.batch_id LIMIT 1
) AS b ON true
LEFT JOIN LATERAL (
    SELECT true AS linked FROM {LINK} WHERE batch_id = c.batch_id LIMIT 1
) AS l ON true
ORDER BY c.queued_at
"""  # noqa: S608 - table names only


def poll_batch_links(limit: int | None = None) -> int:
    """Publish step_completed for links whose batch is terminal, and delete those links.

    Reads the completion queue in the system scope, where row-level security shows
    every tenant's rows, joining batches and links by their keys; then completes each
    tenant's links in that tenant's scope. Returns how many steps completed.
    """
    limit = limit or settings.STEWARD_COMPUTE_POLL_BATCH
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(POLL_QUERY, [limit])
        rows = cursor.fetchall()
    by_tenant: dict = defaultdict(dict)
    without_link: dict = defaultdict(list)
    for batch_id, tenant_id, status, summary, linked in rows:
        if linked:
            # Django leaves jsonb undecoded on a raw cursor.
            summary = json.loads(summary) if isinstance(summary, str) else summary
            # A batch deleted after it finished still completes its step, as missing.
            by_tenant[tenant_id][batch_id] = (status or "batch_missing", summary or {})
        else:
            without_link[tenant_id].append(batch_id)
    completed = 0
    for tenant_id, candidates in by_tenant.items():
        try:
            completed += _complete_waiting_steps(tenant_id, candidates)
        except Exception:  # one tenant's failure must not hold back the others
            logger.exception("completing batch links of tenant %s failed", tenant_id)
    for tenant_id, batch_ids in without_link.items():
        # Nothing waits on these (a step that never linked, or one resolved already).
        with tenant_scope(tenant_id):
            BatchCompletion.objects.filter(batch_id__in=batch_ids).delete()
    return completed


def resolve_orphan_links(limit: int = 500) -> int:
    """Links whose batch no longer exists: complete the step with outcome `batch_missing`
    (and say so in the log), rather than leave the workflow waiting forever."""
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(
            f"SELECT l.batch_id, l.tenant_id FROM {LINK} l"  # noqa: S608
            f" WHERE NOT EXISTS (SELECT 1 FROM {BATCH} b WHERE b.id = l.batch_id) LIMIT %s",
            [limit],
        )
        rows = cursor.fetchall()
    by_tenant: dict = defaultdict(dict)
    for batch_id, tenant_id in rows:
        by_tenant[tenant_id][batch_id] = ("batch_missing", {})
    resolved = sum(
        _complete_waiting_steps(tenant_id, links) for tenant_id, links in by_tenant.items()
    )
    if resolved:
        logger.warning("resolved %s workflow batch links whose batch is missing", resolved)
    return resolved
