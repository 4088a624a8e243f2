"""Stores, the profiles they may run on, residency rules, and each tenant's bindings."""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from apps.core.transitions import Transitions
from apps.tenancy.models import DataClass, Region, Tenant


class WorkloadClass(models.TextChoices):
    CATALOG = "catalog", "Catalog / metadata"
    HOT_LOOKUP = "hot_lookup", "Hot lookup"
    QUEUE = "queue", "Queue (lease, retry, dead-letter)"
    APPEND_LOG = "append_log", "Append log (retention cleanup)"


class Store(models.Model):
    """A logical store a service keeps its data in (`knowledge-sql`, `audit-log`, …)."""

    class Category(models.TextChoices):
        DERIVED = "derived", "Derived (projections, indexes, memory, cache)"
        AUTHORITATIVE = "authoritative", "Authoritative (control, runtime, model, tools)"
        AUDIT = "audit", "Audit"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=128)
    owning_service = models.ForeignKey(
        "registry.Service", on_delete=models.PROTECT, related_name="stores"
    )
    data_class = models.ForeignKey(DataClass, on_delete=models.PROTECT, related_name="+")
    category = models.CharField(max_length=16, choices=Category.choices)
    workload_class = models.CharField(max_length=16, choices=WorkloadClass.choices)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class StoreProfile(models.Model):
    """A way of running stores: an engine and a physical shape."""

    class Engine(models.TextChoices):
        POSTGRESQL = "postgresql", "PostgreSQL"
        SQLSERVER = "sqlserver", "SQL Server"
        MONGODB = "mongodb", "MongoDB"
        SQLITE = "sqlite", "SQLite"

    class Shape(models.TextChoices):
        PORTABLE_DOCUMENTS = "portable_documents", "Portable documents"
        DEDICATED_TABLES = "dedicated_tables", "Dedicated relational tables"
        TYPED_INDEX_COLUMNS = "typed_index_columns", "Typed index columns"
        DEDICATED_COLLECTIONS = "dedicated_collections", "Dedicated collections"

    slug = models.SlugField(max_length=64, unique=True)
    name = models.CharField(max_length=128)
    engine = models.CharField(max_length=16, choices=Engine.choices)
    shape = models.CharField(max_length=24, choices=Shape.choices)
    provides_retention_cleanup = models.BooleanField(default=False)
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class ProfileCertification(models.Model):
    """Evidence that a profile carries a workload: who certified it, when, and the
    benchmark that showed it. Revoked records stay as history."""

    profile = models.ForeignKey(
        StoreProfile, on_delete=models.PROTECT, related_name="certifications"
    )
    workload_class = models.CharField(max_length=16, choices=WorkloadClass.choices)
    certified_by = models.CharField(max_length=150)
    certified_at = models.DateTimeField(default=timezone.now)
    benchmark_reference = models.CharField(
        max_length=500, help_text="Where the benchmark evidence is: a report URL or document id."
    )
    notes = models.TextField(blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    # Evidence ages: past this time the certification counts as ended, as if revoked.
    expires_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-certified_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["profile", "workload_class"],
                condition=Q(revoked_at__isnull=True),
                name="one_live_certification_per_workload",
            )
        ]

    def __str__(self) -> str:
        return f"{self.profile} certified for {self.workload_class}"


class ResidencyRule(models.Model):
    """Where a tenant's data of a class may live. Tenant and data class may each be
    "all"; the most specific rule naming a region decides, a deny beating an allow of
    the same specificity. Rules for all tenants are readable in every tenant's scope."""

    class Effect(models.TextChoices):
        ALLOW = "allow", "Allow"
        DENY = "deny", "Deny"

    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    data_class = models.ForeignKey(
        DataClass, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    effect = models.CharField(max_length=8, choices=Effect.choices)
    regions = models.ManyToManyField(Region, blank=True, related_name="+")
    geographies = ArrayField(
        models.CharField(max_length=64),
        default=list,
        blank=True,
        help_text="Jurisdictions (a region's `jurisdiction`, e.g. EU, IL) the rule covers.",
    )
    is_exception = models.BooleanField(
        default=False, help_text="An allow-listed exception to a broader rule; needs a reason."
    )
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["tenant_id", "data_class_id", "effect", "id"]

    def __str__(self) -> str:
        who = self.tenant.slug if self.tenant_id else "all tenants"
        what = self.data_class.slug if self.data_class_id else "all data"
        return f"{self.effect} {who} / {what}"

    def get_absolute_url(self) -> str:
        return reverse("stores:rule-edit", args=[self.pk])


LIVE_STATUSES = ("requested", "provisioned", "active", "retiring")


class StoreBinding(models.Model):
    """A store bound for one tenant on a profile in a region, and where it stands."""

    class Status(models.TextChoices):
        REQUESTED = "requested", "Requested"
        REFUSED = "refused", "Refused"
        PROVISIONED = "provisioned", "Provisioned"
        ACTIVE = "active", "Active"
        RETIRING = "retiring", "Retiring"
        RETIRED = "retired", "Retired"
        FAILED = "failed", "Failed"

    # The only moves a binding makes (the services check them; anything else
    # is a 409). SetStoreBinding records a binding Requested, or Refused with the verdict.
    TRANSITIONS = Transitions(
        initial=[Status.REQUESTED, Status.REFUSED],
        moves={
            Status.REQUESTED: {Status.PROVISIONED, Status.FAILED},
            Status.PROVISIONED: {Status.ACTIVE, Status.RETIRING, Status.FAILED},
            Status.ACTIVE: {Status.RETIRING},
            Status.RETIRING: {Status.RETIRED, Status.FAILED},
            Status.REFUSED: set(),
            Status.RETIRED: set(),
            Status.FAILED: set(),
        },
    )

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    store = models.ForeignKey(Store, on_delete=models.PROTECT, related_name="bindings")
    profile = models.ForeignKey(StoreProfile, on_delete=models.PROTECT, related_name="bindings")
    region = models.ForeignKey(Region, on_delete=models.PROTECT, related_name="+")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.REQUESTED)
    status_reason = models.TextField(blank=True)
    # References handed out by the secret broker; never the secrets themselves.
    key_reference = models.CharField(max_length=500, blank=True)
    connection_reference = models.CharField(max_length=500, blank=True)
    residency_verdict = models.JSONField(default=dict)
    workload_verdict = models.JSONField(default=dict)
    # Set when a residency rule changed after binding and no longer allows it.
    violation = models.TextField(blank=True)
    violation_detected_at = models.DateTimeField(null=True, blank=True)
    # Set when the evidence the workload verdict relied on was revoked or expired and
    # the workload is no longer allowed on the profile.
    workload_violation = models.TextField(blank=True)
    workload_violation_detected_at = models.DateTimeField(null=True, blank=True)
    # An operator's exception for this binding to the residency rules, until it
    # expires (then `exception_ended_at` is set and the binding is checked again).
    exception_reason = models.TextField(blank=True)
    exception_granted_by = models.CharField(max_length=150, blank=True)
    exception_granted_at = models.DateTimeField(null=True, blank=True)
    exception_expires_at = models.DateTimeField(null=True, blank=True)
    exception_ended_at = models.DateTimeField(null=True, blank=True)
    # Where the tenant's data lived is kept after retirement until the owning service's
    # receipt says the data is gone (governance records it: binding_record_data_purged).
    data_purged_at = models.DateTimeField(null=True, blank=True)
    data_purge_receipt = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "store"],
                condition=Q(status__in=LIVE_STATUSES),
                name="one_live_binding_per_store_and_tenant",
            )
        ]

    def __str__(self) -> str:
        return f"{self.store} for {self.tenant_id} ({self.status})"

    def get_absolute_url(self) -> str:
        return reverse("stores:binding-detail", args=[self.pk])

    def exception_in_force(self, now=None) -> bool:
        """An operator's residency exception for this binding that has not ended."""
        now = now or timezone.now()
        return (
            self.exception_granted_at is not None
            and self.exception_ended_at is None
            and self.exception_expires_at is not None
            and self.exception_expires_at > now
        )

    @property
    def awaits_decision(self) -> bool:
        """Flagged and not yet decided: an operator retires it or grants an exception."""
        return bool(self.violation or self.workload_violation) and self.status in (
            self.Status.REQUESTED,
            self.Status.PROVISIONED,
            self.Status.ACTIVE,
        )


class StoreBindingChange(models.Model):
    """One step of a binding's history."""

    binding = models.ForeignKey(StoreBinding, on_delete=models.CASCADE, related_name="history")
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    from_status = models.CharField(max_length=16, blank=True)
    to_status = models.CharField(max_length=16)
    reason = models.TextField(blank=True)
    actor_label = models.CharField(max_length=150, blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.from_status or 'new'} → {self.to_status}"
