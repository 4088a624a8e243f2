from __future__ import annotations

import uuid

from django.db import models
from django.utils import timezone

from apps.core.transitions import Transitions
from apps.tenancy.models import Tenant


class ComputeBatch(models.Model):
    """A batch of compute work started by a workflow's `submit_compute` step."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    TERMINAL = frozenset({Status.SUCCEEDED, Status.FAILED, Status.CANCELLED})
    # Terminal states are final: the poller completes the waiting step once.
    TRANSITIONS = Transitions(
        initial=[Status.QUEUED],
        moves={
            Status.QUEUED: {Status.RUNNING, *TERMINAL},
            Status.RUNNING: TERMINAL,
            **dict.fromkeys(TERMINAL, frozenset()),
        },
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    idempotency_key = models.CharField(
        max_length=200, help_text="The submitting step's idempotency key."
    )
    workflow_instance_id = models.CharField(max_length=64)
    workflow_step_id = models.CharField(max_length=64)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    result_summary = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "idempotency_key"], name="compute_batch_idempotency"
            ),
        ]

    def __str__(self) -> str:
        return f"batch {self.pk} ({self.status})"


class BatchCompletion(models.Model):
    """A batch that turned terminal and whose waiting step (if any) is not completed yet.

    The poller's work queue: it holds only what is to be done, so a poll costs what is
    terminal, not what is outstanding, and finishing is a DELETE (a flag on the batch
    row would be an UPDATE through all of that table's indexes).
    """

    batch_id = models.UUIDField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    queued_at = models.DateTimeField(default=timezone.now)

    class Meta:
        # The poller takes the queue in the order batches finished.
        indexes = [models.Index(fields=["queued_at"], name="compute_completion_queued")]

    def __str__(self) -> str:
        return f"completion of {self.batch_id}"


class WorkflowBatchLink(models.Model):
    """One workflow step waiting for one batch. Current state only: deleted, never closed."""

    batch_id = models.UUIDField(primary_key=True)
    workflow_step_id = models.CharField(max_length=64)
    workflow_instance_id = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)

    class Meta:
        db_table = "workflow_batch_link"
        indexes = [models.Index(fields=["tenant"], name="workflow_batch_links_tenant")]

    def __str__(self) -> str:
        return f"{self.workflow_instance_id}/{self.workflow_step_id} ← {self.batch_id}"
