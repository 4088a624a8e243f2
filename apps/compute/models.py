from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

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
    TRANSITIONS = {
        Status.QUEUED: {Status.RUNNING, Status.SUCCEEDED, Status.FAILED, Status.CANCELLED},
        Status.RUNNING: {Status.SUCCEEDED, Status.FAILED, Status.CANCELLED},
    }

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    idempotency_key = models.CharField(
        max_length=200, help_text="The submitting step's idempotency key."
    )
    workflow_instance_id = models.CharField(max_length=100)
    workflow_step_id = models.CharField(max_length=100)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    result_summary = models.JSONField(default=dict, blank=True)
    # Set when the batch turns terminal, cleared by the poller once its link is resolved:
    # the poller finds its work through a partial index on this, so a poll costs what
    # is terminal, not what is outstanding.
    completion_pending = models.BooleanField(default=False)
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
        indexes = [
            models.Index(
                fields=["id"], name="compute_batch_pending", condition=Q(completion_pending=True)
            ),
        ]

    def __str__(self) -> str:
        return f"batch {self.pk} ({self.status})"

    @property
    def is_terminal(self) -> bool:
        return self.status in self.TERMINAL


class WorkflowBatchLink(models.Model):
    """One workflow step waiting for one batch. Current state only: deleted, never closed."""

    batch_id = models.UUIDField(primary_key=True)
    workflow_step_id = models.CharField(max_length=100)
    workflow_instance_id = models.CharField(max_length=100)
    created_at = models.DateTimeField(default=timezone.now)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+", db_index=False)

    class Meta:
        db_table = "workflow_batch_link"
        indexes = [models.Index(fields=["tenant"], name="workflow_batch_links_tenant")]

    def __str__(self) -> str:
        return f"{self.workflow_instance_id}/{self.workflow_step_id} ← {self.batch_id}"
