"""Governance orders (tenant deletion and export), their approvals and their evidence."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models.fields.json import KT
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
        RUNNING = "running", "Running"
        # A task is past its due date: alerted, and still waiting (no phase is skipped).
        OVERDUE = "overdue", "Overdue"
        COMPLETED = "completed", "Completed"
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
    # The phase whose tasks are out (1-based, see apps.governance.phases); 0 before.
    phase = models.PositiveSmallIntegerField(default=0)
    started_at = models.DateTimeField(null=True, blank=True)
    completed_at = models.DateTimeField(null=True, blank=True)
    final_digest = models.CharField(max_length=64, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} of {self.tenant_id} ({self.status})"

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("governance:order-detail", args=[self.pk])

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
    """Work addressed to one owning service for one tenant: a phase of an order, or a
    purge the retention sweeper issued. Steward is the owner of its own tables.

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

    # A template's `task.receipt.items` would call the dict's items() method when the
    # receipt has no "items" key (an export's bundles), and show its pairs as lines.
    @property
    def receipt_items(self) -> list[dict]:
        return self.receipt.get("items", [])

    @property
    def receipt_bundles(self) -> list[dict]:
        return self.receipt.get("bundles", [])


class ExportArtifact(models.Model):
    """The archive an export order produced; its file is deleted when it expires and
    by the tenant's deletion, the row stays as the record of it."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    order = models.OneToOneField(GovernanceOrder, on_delete=models.PROTECT, related_name="artifact")
    path = models.CharField(max_length=500, help_text="Under STEWARD_EXPORT_DIR.")
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


# =============================================================================== retention
# Retention rules (operator-managed, platform-wide), legal holds (a tenant's), and the
# record of each nightly sweep. The policy is apps.governance.retention; the writes are
# apps.governance.retention_services.


class RetentionRule(models.Model):
    """How long data of a class and/or in a store is kept, and what happens after.

    A locked rule is a commitment: its period may grow, nothing else about it may
    change, and it stays enabled and in place. The service refuses the rest with a
    stable code; a trigger (migration 0003) refuses it in the database as well.
    """

    class Action(models.TextChoices):
        DELETE = "delete", "Delete"
        REDACT = "redact", "Redact"
        ARCHIVE = "archive", "Archive"

    name = models.CharField(max_length=100, unique=True)
    data_class = models.ForeignKey(
        "tenancy.DataClass", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    store = models.ForeignKey(
        "stores.Store", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    period_days = models.PositiveIntegerField()
    action = models.CharField(max_length=16, choices=Action.choices)
    locked = models.BooleanField(default=False)
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(data_class__isnull=False) | models.Q(store__isnull=False),
                name="retention_rule_has_scope",
            ),
            models.CheckConstraint(
                condition=models.Q(period_days__gte=1), name="retention_rule_period_positive"
            ),
            models.CheckConstraint(
                condition=~models.Q(locked=True, enabled=False),
                name="retention_rule_locked_is_enabled",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.period_days} d, {self.action})"

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("retention:rule-edit", args=[self.pk])

    @property
    def scope_label(self) -> str:
        return _scope_label(self)


class LegalHold(models.Model):
    """Nothing of the tenant in scope is purged while the hold is active.

    Scope: a store, a data class, or (neither) everything of the tenant; a hold naming
    both names a store of that class. Released, it stays as the record of what was
    held, by whom and why.
    """

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    data_class = models.ForeignKey(
        "tenancy.DataClass", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    store = models.ForeignKey(
        "stores.Store", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    reason = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    released_at = models.DateTimeField(null=True, blank=True)
    released_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    release_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(reason=""), name="legal_hold_reason_required"
            ),
            models.CheckConstraint(
                condition=models.Q(released_at__isnull=True)
                | (models.Q(released_by__isnull=False) & ~models.Q(release_reason="")),
                name="legal_hold_release_recorded",
            ),
        ]

    def __str__(self) -> str:
        return f"hold on {self.scope_label} of {self.tenant_id}"

    def get_absolute_url(self) -> str:
        from django.urls import reverse

        return reverse("retention:hold-detail", args=[self.pk])

    @property
    def active(self) -> bool:
        return self.released_at is None

    @property
    def scope_label(self) -> str:
        return _scope_label(self) or "the whole tenant"


def _scope_label(obj) -> str:
    """What a rule or a hold covers: its data class and/or store."""
    parts = []
    if obj.data_class_id:
        parts.append(f"class {obj.data_class.slug}")
    if obj.store_id:
        parts.append(f"store {obj.store.slug}")
    return " and ".join(parts)


class RetentionSweep(models.Model):
    """One night's sweep: what it issued, held and purged. A second run of the same
    night works against the same `as_of`, so it issues and purges nothing more."""

    class Status(models.TextChoices):
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    night = models.DateField(unique=True)
    as_of = models.DateTimeField()
    started_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.RUNNING)
    runs = models.PositiveIntegerField(default=0)
    results = models.JSONField(default=dict, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        ordering = ["-night"]

    def __str__(self) -> str:
        return f"sweep of {self.night} ({self.status})"
