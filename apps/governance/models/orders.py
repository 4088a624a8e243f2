"""Governance orders (tenant deletion and export), their approvals, their evidence, the
owner tasks they issue and the export archive they produce."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models.fields.json import KT
from django.utils import timezone

from apps.core.transitions import Transitions
from apps.core.urls import reverse_pk
from apps.tenancy.models import Tenant


class GovernanceOrder(models.Model):
    """A tenant deletion or export, from request through approval to completion."""

    class Kind(models.TextChoices):
        DELETION = "deletion", "Tenant deletion"
        EXPORT = "export", "Tenant export"

    class Status(models.TextChoices):
        REQUESTED = "requested", "Awaiting approval"
        APPROVED = "approved", "Approved"
        RUNNING = "running", "Running"
        # A task is past its due date: alerted, and still waiting (no phase is skipped).
        OVERDUE = "overdue", "Overdue"
        COMPLETED = "completed", "Completed"
        REJECTED = "rejected", "Rejected"
        CANCELLED = "cancelled", "Cancelled"

    # Moved by apps.governance.orders.services. Approved and Requested orders may be
    # cancelled until their first phase begins; Running and Overdue alternate while
    # tasks pass their due date and settle.
    TRANSITIONS = Transitions(
        initial=[Status.REQUESTED],
        moves={
            Status.REQUESTED: {Status.APPROVED, Status.REJECTED, Status.CANCELLED},
            Status.APPROVED: {Status.RUNNING, Status.CANCELLED},
            Status.RUNNING: {Status.OVERDUE, Status.COMPLETED},
            Status.OVERDUE: {Status.RUNNING, Status.COMPLETED},
            Status.COMPLETED: set(),
            Status.REJECTED: set(),
            Status.CANCELLED: set(),
        },
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.REQUESTED)
    reason = models.TextField()
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    approvals_needed = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)
    # The phase whose tasks are out (1-based, see apps.governance.orders.phases); 0 before.
    phase = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    final_digest = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of {self.tenant_id} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse_pk("governance:order-detail", self.pk)

    @property
    def in_progress(self) -> bool:
        return self.status in (self.Status.RUNNING, self.Status.OVERDUE)


class OrderApproval(models.Model):
    """One person's decision on an order; the requester never decides their own."""

    order = models.ForeignKey(GovernanceOrder, on_delete=models.PROTECT, related_name="approvals")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    approver = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    approve = models.BooleanField()
    comment = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["order", "approver"], name="one_decision_per_approver")
        ]

    def __str__(self) -> str:
        return f"{'approve' if self.approve else 'reject'} by {self.approver_id}"


class EvidenceEntry(models.Model):
    """One link of an order's hash chain: append-only (the database refuses changes).

    `digest` = SHA-256 over the previous entry's digest and this entry's canonical
    JSON (sequence, kind, time, data), so changing or removing any entry breaks every
    digest after it; the last digest stands for the whole history.
    """

    order = models.ForeignKey(GovernanceOrder, on_delete=models.PROTECT, related_name="evidence")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    sequence = models.PositiveIntegerField()
    kind = models.CharField(max_length=48)
    data = models.JSONField(default=dict)
    at = models.DateTimeField(default=timezone.now)
    previous_digest = models.CharField(max_length=64)
    digest = models.CharField(max_length=64)

    class Meta:
        ordering = ["order_id", "sequence"]
        constraints = [
            models.UniqueConstraint(fields=["order", "sequence"], name="evidence_sequence")
        ]

    def __str__(self) -> str:
        return f"{self.order_id} #{self.sequence} {self.kind}"


class GovernanceTask(models.Model):
    """An owner task: work addressed to one owning service for one tenant, a phase of
    an order or a purge the retention sweep issued. Steward is the owner of its own
    tables (apps.governance.steward_owner). Not a Celery task: see apps.governance.

    The owner acknowledges it and completes it with a receipt (what was deleted or
    redacted, counts, a digest), or reports it failed; an operator may retry a failed
    task. Past its due date it is overdue: alerted once, and still awaited.
    """

    class Kind(models.TextChoices):
        DELETE = "delete", "Delete"
        REDACT = "redact", "Redact"
        CLOSE_SUBSCRIPTION = "close_subscription", "Close the subscription"
        EXPORT = "export", "Export a bundle"
        PURGE = "purge", "Purge expired data"

    class Status(models.TextChoices):
        ISSUED = "issued", "Issued"
        ACKNOWLEDGED = "acknowledged", "Acknowledged"
        COMPLETED = "completed", "Completed"
        FAILED = "failed", "Failed"
        DECLINED = "declined", "Declined"  # an export bundle the owner will not give

    OPEN = (Status.ISSUED, Status.ACKNOWLEDGED)
    # Moved by apps.governance.orders.services: an open task is settled once (a
    # receipt, a failure, or an export bundle declined); an operator issues a failed
    # one again (a retry), or an open one afresh to another owner (a reassignment):
    # each takes only its own sources (`from_`).
    TRANSITIONS = Transitions(
        initial=[Status.ISSUED],
        moves={
            Status.ISSUED: {
                Status.ISSUED,  # reassigned
                Status.ACKNOWLEDGED,
                Status.COMPLETED,
                Status.FAILED,
                Status.DECLINED,
            },
            Status.ACKNOWLEDGED: {
                Status.ISSUED,  # reassigned
                Status.COMPLETED,
                Status.FAILED,
                Status.DECLINED,
            },
            Status.FAILED: {Status.ISSUED},  # retried
            Status.COMPLETED: set(),
            Status.DECLINED: set(),
        },
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    order = models.ForeignKey(
        GovernanceOrder, null=True, blank=True, on_delete=models.PROTECT, related_name="tasks"
    )
    phase = models.PositiveSmallIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=24, choices=Kind.choices)
    owner = models.SlugField(max_length=100, help_text="The owning service's name.")
    store = models.ForeignKey(
        "stores.Store", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ISSUED)
    attempt = models.PositiveSmallIntegerField(default=1)
    issued_at = models.DateTimeField(default=timezone.now)
    due_at = models.DateTimeField()
    acknowledged_at = models.DateTimeField(null=True, blank=True)
    settled_at = models.DateTimeField(null=True, blank=True)
    overdue_at = models.DateTimeField(null=True, blank=True)
    # A purge a legal hold placed after its issue pauses: the owner is told to stop,
    # its receipt is refused, it is not overdue, and the hold's release resumes it.
    held_at = models.DateTimeField(null=True, blank=True)
    # An overdue task an operator reminded its owner of (due afresh), or escalated: handed
    # to the order's requester and the governance topic's subscribers, out of the queue.
    reminded_at = models.DateTimeField(null=True, blank=True)
    escalated_at = models.DateTimeField(null=True, blank=True)
    receipt = models.JSONField(default=dict, blank=True)
    detail = models.JSONField(default=dict, blank=True, help_text="What the owner is asked.")
    failure = models.TextField(blank=True)

    class Meta:
        ordering = ["issued_at", "id"]
        indexes = [
            models.Index(fields=["order", "phase"], name="governance_task_phase"),
            models.Index(
                fields=["due_at"],
                condition=models.Q(status__in=["issued", "acknowledged"], overdue_at=None),
                name="governance_task_due",
            ),
        ]
        constraints = [
            # The sweeper's key (night, tenant, store, rule): a purge is issued once,
            # whatever runs the sweep twice.
            models.UniqueConstraint(
                KT("detail__key"),
                condition=models.Q(kind="purge"),
                name="one_purge_task_per_key",
            )
        ]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} by {self.owner} ({self.status})"

    @property
    def is_open(self) -> bool:
        return self.status in self.OPEN

    @property
    def is_overdue(self) -> bool:
        return self.is_open and self.overdue_at is not None

    @property
    def is_held(self) -> bool:
        return self.is_open and self.held_at is not None


class ExportArtifact(models.Model):
    """The archive an export order produced; its bytes (ExportChunk rows under `path`)
    are deleted when it expires and by the tenant's deletion, the row stays as the
    record of it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    order = models.OneToOneField(GovernanceOrder, on_delete=models.PROTECT, related_name="artifact")
    path = models.CharField(max_length=500, help_text="The archive's key in the export store.")
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"export {self.order_id} ({self.size} bytes)"

    @property
    def available(self) -> bool:
        return self.deleted_at is None and self.expires_at > timezone.now()


class ExportChunk(models.Model):
    """One piece of an export bundle or archive, stored in PostgreSQL so that every web
    process and worker reaches it: the file under `key` is its chunks in `seq` order,
    each the store's chunk size but the last (apps.governance.orders.archive_store)."""

    id = models.BigAutoField(primary_key=True)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    order = models.ForeignKey(GovernanceOrder, on_delete=models.PROTECT, related_name="+")
    key = models.CharField(max_length=500)
    seq = models.PositiveIntegerField()
    data = models.BinaryField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["key", "seq"], name="one_export_chunk_per_place")
        ]
        indexes = [models.Index(fields=["created_at"], name="governance_chunk_created")]

    def __str__(self) -> str:
        return f"{self.key} #{self.seq}"
