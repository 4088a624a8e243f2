"""Retention rules (operator-managed, platform-wide), legal holds (a tenant's), and the
record of each nightly sweep. The policy is apps.governance.retention.policy; the writes
are apps.governance.retention.services."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.core.transitions import Transitions
from apps.core.urls import reverse_pk
from apps.tenancy.models import Tenant


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
        return reverse_pk("retention:rule-edit", self.pk)

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
        return reverse_pk("retention:hold-detail", self.pk)

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

    # A run of the night (again) takes the sweep whatever the last one left: a run that
    # died with its worker left it running, and the advisory lock lets one run at a time.
    TRANSITIONS = Transitions(
        initial=[Status.RUNNING],
        moves={
            Status.RUNNING: {Status.RUNNING, Status.SUCCEEDED, Status.FAILED},
            Status.SUCCEEDED: {Status.RUNNING},
            Status.FAILED: {Status.RUNNING},
        },
    )

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
