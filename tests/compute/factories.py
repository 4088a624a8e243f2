"""Batches in the states the compute tests start from, and what the tests read back."""

import uuid

from apps.compute import services
from apps.compute.models import WorkflowBatchLink
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.eventing.models import OutboxEvent


def submit(tenant, step="step-1", instance=None):
    batch, _ = services.batch_submit(
        actor=SYSTEM_ACTOR,
        tenant=tenant,
        idempotency_key=f"key-{uuid.uuid4().hex[:8]}",
        workflow_instance_id=instance or f"wf-{uuid.uuid4().hex[:6]}",
        workflow_step_id=step,
    )
    return batch


def batches_added_to(*tenants):
    """`add_rows` for tests.query_counts: n more batches in each of these tenants."""

    def add_rows(n):
        for tenant in tenants:
            for _ in range(n):
                submit(tenant)

    return add_rows


def finish(batch, status="succeeded", summary=None):
    return services.batch_set_status(
        actor=SYSTEM_ACTOR, batch=batch, status=status, result_summary=summary or {"rows": 3}
    )


def step_events():
    with system_scope():
        return list(
            OutboxEvent.objects.filter(topic="compute.step")
            .order_by("id")
            .values_list("payload", "tenant_id")
        )


def links():
    with system_scope():
        return set(WorkflowBatchLink.objects.values_list("batch_id", flat=True))
