from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q, QuerySet
from django.urls import reverse
from django.utils import timezone
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

from apps.core.transitions import Transitions
from apps.tenancy.models import Tenant


class AssetQuerySet(QuerySet):
    def workflow_managed(self) -> AssetQuerySet:
        """Assets waiting on the Workflow Service: a workflow reference and Requested.
        One query through IX_Assets_WorkflowInstance."""
        return self.filter(workflow_instance_id__isnull=False, status=Asset.Status.REQUESTED)


class Asset(models.Model):
    """Something a tenant owns whose use needs approval, decided by a person or by a
    workflow instance in the external Workflow Service."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        REQUESTED = "requested", "Requested"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        RETIRED = "retired", "Retired"

    # A person or the Workflow Service decides a request; a rejected asset may be asked
    # for again. No service retires an asset yet: the table names the move the Retired
    # status stands for, so that every status is reachable.
    TRANSITIONS = Transitions(
        initial=[Status.DRAFT],
        moves={
            Status.DRAFT: {Status.REQUESTED},
            Status.REQUESTED: {Status.APPROVED, Status.REJECTED},
            Status.REJECTED: {Status.REQUESTED},
            Status.APPROVED: {Status.RETIRED},
            Status.RETIRED: set(),
        },
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    # The Workflow Service's instance deciding the approval: an identifier only (no
    # foreign key, no copy of the instance), kept after the decision as the link back.
    workflow_instance_id = models.UUIDField(null=True, blank=True)
    # Derived from the asset and the approval request: the idempotency key of the
    # start call, so a retried start never creates a second instance.
    approval_request_id = models.UUIDField(null=True, blank=True)
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=150, blank=True)
    decision_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AssetQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            models.Index(fields=["workflow_instance_id"], name="IX_Assets_WorkflowInstance"),
            # Lists page newest first, within a tenant (console, tenant callers) or
            # across tenants (platform callers): without these every page sorted them all.
            models.Index(fields=["tenant", "created_at", "id"], name="asset_tenant_newest"),
            models.Index(fields=["created_at", "id"], name="asset_newest"),
        ]
        constraints = [
            # A workflow reference only on an asset that went through a request.
            models.CheckConstraint(
                condition=Q(workflow_instance_id__isnull=True) | ~Q(status="draft"),
                name="asset_workflow_reference_after_request",
            ),
        ]
        permissions = [("approve_asset", "Approve or reject the asset")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("assets:asset-detail", args=[self.pk])

    @property
    def is_workflow_managed(self) -> bool:
        return self.workflow_instance_id is not None and self.status == self.Status.REQUESTED


class WorkflowCallback(models.Model):
    """A receipt for every callback the Workflow Service sent, and what came of it."""

    class Outcome(models.TextChoices):
        PENDING = "pending", "Pending"
        APPLIED = "applied", "Applied"
        IGNORED = "ignored", "Ignored (already decided)"
        UNKNOWN_INSTANCE = "unknown_instance", "Unknown instance"

    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    workflow_instance_id = models.UUIDField(db_index=True)
    decision = models.CharField(max_length=16)
    reason = models.TextField(blank=True)
    callback_id = models.CharField(max_length=100, blank=True)
    outcome = models.CharField(max_length=20, choices=Outcome.choices, default=Outcome.PENDING)
    received_at = models.DateTimeField(default=timezone.now)
    applied_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        indexes = [
            # The workers' queue: a tenant's pending receipts in arrival order.
            models.Index(
                fields=["tenant", "id"],
                condition=Q(outcome="pending"),
                name="assets_callback_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.decision} for {self.workflow_instance_id} ({self.outcome})"


class AssetUserObjectPermission(UserObjectPermissionBase):
    """Direct-foreign-key object permissions on assets (django-guardian)."""

    content_object = models.ForeignKey(Asset, on_delete=models.CASCADE)


class AssetGroupObjectPermission(GroupObjectPermissionBase):
    content_object = models.ForeignKey(Asset, on_delete=models.CASCADE)
