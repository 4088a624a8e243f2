"""Governance orders (tenant deletion and export), their approvals and their evidence."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.tenancy.models import Tenant


class GovernanceOrder(models.Model):
    """A tenant deletion or export, from request through approval to completion."""

    class Kind(models.TextChoices):
        DELETION = "deletion", "Tenant deletion"
        EXPORT = "export", "Tenant export"

    class Status(models.TextChoices):
        REQUESTED = "requested", "Awaiting approval"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        CANCELLED = "cancelled", "Cancelled"

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

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of {self.tenant_id} ({self.status})"


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
