"""Stores, the profiles they may run on, residency rules, and each tenant's bindings."""

from __future__ import annotations

import uuid

from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.core.transitions import Transitions
from apps.core.urls import reverse_pk
from apps.tenancy.models import DataClass, Region, Tenant


class WorkloadClass(models.TextChoices):
    CATALOG = "catalog", "Catalog / metadata"
    INSTANCE_QUERY = "instance_query", "Workflow instances / query surfaces"
    HOT_LOOKUP = "hot_lookup", "Hot lookup (bookmarks, triggers)"
    QUEUE = "queue", "Queue (lease, retry, dead-letter)"
    APPEND_LOG = "append_log", "Append log (retention cleanup)"


class QueryShape(models.TextChoices):
    """The query shapes the persistence decision asks benchmarks of."""

    INSTANCE_STATUS = "instance_status", "Instances by status"
    INSTANCE_SUB_STATUS = "instance_sub_status", "Instances by sub-status"
    INSTANCE_DEFINITION_ID = "instance_definition_id", "Instances by definition id"
    INSTANCE_VERSION = "instance_version", "Instances by version"
    INSTANCE_CORRELATION_ID = "instance_correlation_id", "Instances by correlation id"
    INSTANCE_UPDATED_AT = "instance_updated_at", "Instances by updated timestamp"
    BOOKMARK_ACTIVITY_TYPE = "bookmark_activity_type", "Bookmark lookup by activity type"
    BOOKMARK_HASH = "bookmark_hash", "Bookmark lookup by hash"
    BOOKMARK_INSTANCE_ID = "bookmark_instance_id", "Bookmark lookup by workflow instance id"
    BOOKMARK_TENANT_ID = "bookmark_tenant_id", "Bookmark lookup by tenant id"
    TRIGGER_HASH = "trigger_hash", "Trigger lookup by hash"
    TRIGGER_DEFINITION_ID = "trigger_definition_id", "Trigger lookup by workflow definition id"
    TRIGGER_TENANT_ID = "trigger_tenant_id", "Trigger lookup by tenant id"
    QUEUE_DEQUEUE = "queue_dequeue", "Queue dequeue"
    QUEUE_LEASE = "queue_lease", "Queue lease"
    QUEUE_RETRY = "queue_retry", "Queue retry"
    QUEUE_DEAD_LETTER = "queue_dead_letter", "Queue dead-letter"
    LOG_APPEND = "log_append", "Log append throughput"
    LOG_RETENTION_CLEANUP = "log_retention_cleanup", "Log retention-cleanup throughput"


class Provider(models.TextChoices):
    """The supported providers, as the persistence decision lists them (the same values
    as StoreProfile.Engine: a profile's engine is its provider), by product name."""

    SQLITE = "sqlite", "SQLite"
    SQLSERVER = "sqlserver", "Microsoft SQL Server"
    POSTGRESQL = "postgresql", "PostgreSQL"
    MONGODB = "mongodb", "MongoDB"


class ProviderContract(models.TextChoices):
    """The provider contract tests hot lookups are gated on."""

    OPTIMISTIC_CONCURRENCY = "optimistic_concurrency", "Optimistic concurrency failures"
    DISTRIBUTED_LOCK = "distributed_lock", "Distributed lock behaviour"
    DUPLICATE_STARTUP = "duplicate_startup", "Duplicate startup materialization"
    WORKER_RETRY = "worker_retry", "Worker retry behaviour"
    TRANSACTIONAL_INDEX = "transactional_index", "Transactional index updates"
    PARTIAL_MATERIALIZATION = (
        "partial_materialization",
        ("Recovery after partial materialization failure"),
    )


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


class EvidenceRecord(models.Model):
    """Who recorded a piece of workload evidence, when, and from what run. The latest
    record of a kind decides (a newer failure supersedes an older pass)."""

    recorded_by = models.CharField(max_length=150)
    recorded_at = models.DateTimeField(default=timezone.now)
    run_reference = models.CharField(
        max_length=500, help_text="The run it came from: a CI job URL, a benchmark run id."
    )

    class Meta:
        abstract = True
        ordering = ["-recorded_at", "-id"]


class BenchmarkResult(EvidenceRecord):
    """A benchmark of one query shape on one provider (and, for a profile's declared
    indexes, on that profile): its figure against its threshold, passed or failed."""

    provider = models.CharField(max_length=16, choices=Provider.choices)
    query_shape = models.CharField(max_length=32, choices=QueryShape.choices)
    profile = models.ForeignKey(
        StoreProfile,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="benchmark_results",
        help_text="The profile whose declared indexes were measured; empty for a "
        "provider-wide representative benchmark.",
    )
    figure = models.FloatField()
    threshold = models.FloatField()
    unit = models.CharField(max_length=32, blank=True, help_text="e.g. ms p95, ops/s")
    passed = models.BooleanField()

    class Meta(EvidenceRecord.Meta):
        indexes = [models.Index(fields=["query_shape", "provider", "-recorded_at"])]

    def __str__(self) -> str:
        return f"{self.query_shape} on {self.provider}: {'pass' if self.passed else 'fail'}"


class ContractTestResult(EvidenceRecord):
    """A provider contract test's outcome on one provider."""

    provider = models.CharField(max_length=16, choices=Provider.choices)
    contract = models.CharField(max_length=32, choices=ProviderContract.choices)
    passed = models.BooleanField()

    def __str__(self) -> str:
        return f"{self.contract} on {self.provider}: {'pass' if self.passed else 'fail'}"


class PhysicalizationPolicy(EvidenceRecord):
    """How a profile physicalizes a workload's filters, and how to roll it back."""

    class Kind(models.TextChoices):
        DEDICATED_TABLES = "dedicated_tables", "Relational dedicated tables"
        INDEX_COLUMNS = "index_columns", "Generated or typed index columns"
        DEDICATED_COLLECTIONS = "dedicated_collections", "MongoDB dedicated collections"
        NATIVE_INDEXES = "native_indexes", "Native provider indexes"
        RETENTION_COMMANDS = "retention_commands", "Retention / cleanup commands"

    profile = models.ForeignKey(
        StoreProfile, on_delete=models.PROTECT, related_name="physicalization_policies"
    )
    workload_class = models.CharField(max_length=16, choices=WorkloadClass.choices)
    kind = models.CharField(max_length=24, choices=Kind.choices)
    description = models.TextField(blank=True)
    rollback_guidance = models.TextField()

    def __str__(self) -> str:
        return f"{self.kind} for {self.workload_class} on {self.profile}"


class MigrationPilot(EvidenceRecord):
    """Step 6 of the migration strategy: one non-critical runtime-adjacent store piloted
    on a profile — which store, on what, from when to when, and how it went. The latest
    record of a store on a profile decides (a running pilot is recorded again when it
    ends)."""

    class Outcome(models.TextChoices):
        RUNNING = "running", "Running (no outcome yet)"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    store = models.ForeignKey(Store, on_delete=models.PROTECT, related_name="pilots")
    profile = models.ForeignKey(StoreProfile, on_delete=models.PROTECT, related_name="pilots")
    started_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices)
    notes = models.TextField(blank=True)

    class Meta(EvidenceRecord.Meta):
        indexes = [models.Index(fields=["profile", "-recorded_at"])]

    def __str__(self) -> str:
        return f"pilot of {self.store} on {self.profile}: {self.outcome}"


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
        return reverse_pk("stores:rule-edit", self.pk)


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

    # The only moves a binding makes (the services move along them with
    # TRANSITIONS.move; anything else is a 409). SetStoreBinding records a binding
    # Requested, or Refused with the verdict.
    TRANSITIONS = Transitions(
        initial=[Status.REQUESTED, Status.REFUSED],
        moves={
            # Retiring a Requested binding cancels its provisioning: an operator's exit
            # from a flagged one, and how a deletion order ends one still being provisioned.
            Status.REQUESTED: {Status.PROVISIONED, Status.RETIRING, Status.FAILED},
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
        return reverse_pk("stores:binding-detail", self.pk)

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
