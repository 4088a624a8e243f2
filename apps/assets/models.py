from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q, QuerySet
from django.db.models.functions import Upper
from django.utils import timezone
from guardian.models import GroupObjectPermissionBase, UserObjectPermissionBase

from apps.core.literals import Literal
from apps.core.search import name_indexes
from apps.core.transitions import Transitions
from apps.core.urls import reverse_pk
from apps.tenancy.models import Tenant


class AssetQuerySet(QuerySet):
    def workflow_managed(self) -> AssetQuerySet:
        """Assets waiting on the Workflow Service: Requested, with an instance started for
        the current request. The instance id stays on the row after its decision, and a
        re-request keeps it until a new delegation replaces it, so `workflow_link_stale`
        tells "waiting on X" from "was once decided by X". Served by the partial index
        asset_waiting_on_workflow, whose size is the waiting assets, not every asset
        ever delegated."""
        return self.filter(
            workflow_instance_id__isnull=False,
            # A literal, so that a plan made once for every run still meets the index's
            # condition (apps.core.literals).
            status=Literal(Asset.Status.REQUESTED.value),
            workflow_link_stale=False,
        )

    def undelegated(self) -> AssetQuerySet:
        """Assets whose current request has no workflow instance (yet)."""
        return self.filter(Q(workflow_instance_id__isnull=True) | Q(workflow_link_stale=True))

    def delegation_failed(self) -> AssetQuerySet:
        """Requested assets whose delegation the Workflow Service refused, or that failed:
        they wait on a person (retry, or decide by hand)."""
        return self.filter(status=Asset.Status.REQUESTED).exclude(delegation_failure="")


# One asset waits on a workflow instance at a time (the partial unique index's name).
ONE_LIVE_LINK = "asset_one_live_link_per_instance"


class Asset(models.Model):
    """Something a tenant owns whose use needs approval, decided by a person or by a
    workflow instance in the external Workflow Service."""

    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        REQUESTED = "requested", "Requested"
        APPROVED = "approved", "Approved"
        REJECTED = "rejected", "Rejected"
        RETIRED = "retired", "Retired"

    # A Draft may be deleted; anything once asked for keeps its history.
    DELETABLE = frozenset({Status.DRAFT})
    # A person or the Workflow Service decides a request; a rejected asset may be asked
    # for again; an approved one is retired with a reason. A request may be withdrawn
    # (retired, with a reason) too: the way out of one whose decision never comes
    # (attention kind overdue-decision); a late callback then decides nothing.
    TRANSITIONS = Transitions(
        initial=[Status.DRAFT],
        moves={
            Status.DRAFT: {Status.REQUESTED},
            Status.REQUESTED: {Status.APPROVED, Status.REJECTED, Status.RETIRED},
            Status.REJECTED: {Status.REQUESTED},
            Status.APPROVED: {Status.RETIRED},
            Status.RETIRED: set(),
        },
        deletable=DELETABLE,
    )
    # Name and description may change in any status but this one: a decider (a person
    # or a workflow instance) is looking at the asset as it was asked for.
    FROZEN = frozenset({Status.REQUESTED})

    class DelegationFailure(models.TextChoices):
        NONE = "", "None"
        REFUSED = "refused", "Refused by the Workflow Service"
        FAILED = "failed", "Failed"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.PROTECT, related_name="+")
    name = models.CharField(max_length=200)
    # The name upper-cased, in byte order: the start of a name in any case is a range of
    # it. Row-level security lets PostgreSQL use an index only for a leakproof condition,
    # which `<`/`>=` on a column are and LIKE and upper() are not.
    name_folded = models.GeneratedField(
        expression=Upper("name"),
        output_field=models.CharField(max_length=200, db_collation="C"),
        db_persist=True,
    )
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    # The Workflow Service's instance deciding the approval: an identifier only (no
    # foreign key, no copy of the instance), kept after the decision as the link back.
    workflow_instance_id = models.UUIDField(null=True, blank=True)
    # Derived from the asset and the approval request: the idempotency key of the
    # start call, so a retried start never creates a second instance.
    approval_request_id = models.UUIDField(null=True, blank=True)
    # Set when the asset is asked for again: the instance id above then names the
    # earlier request's instance, kept as the link back, not one deciding the current
    # request; a new delegation replaces the id and clears this.
    workflow_link_stale = models.BooleanField(default=False, db_default=False)
    # Why the current request's delegation is stuck (refused or failed), shown on the
    # asset and in the attention queue until retried or decided by a person.
    # (Columns added since 0007 have database defaults too: rows written by raw SQL,
    # the benchmarks' among them, need not name them.)
    delegation_failure = models.CharField(
        max_length=16, choices=DelegationFailure.choices, blank=True, default="", db_default=""
    )
    # Why the asset is as it is: the delegation's failure, or the retirement's reason.
    status_reason = models.TextField(blank=True, default="", db_default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.CharField(max_length=150, blank=True)
    decision_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    objects = AssetQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # Callbacks find their asset by instance, for as long as the id is kept.
            models.Index(fields=["workflow_instance_id"], name="IX_Assets_WorkflowInstance"),
            # The waiting assets only (see workflow_managed): newest first, as listed.
            models.Index(
                fields=["created_at"],
                condition=Q(status="requested", workflow_instance_id__isnull=False),
                name="asset_waiting_on_workflow",
            ),
            models.Index(
                fields=["created_at"],
                condition=Q(status="requested") & ~Q(delegation_failure=""),
                name="asset_delegation_failed",
            ),
            # Lists page newest first, within a tenant (console, tenant callers) or
            # across tenants (platform callers): without these every page sorted them all.
            models.Index(fields=["tenant", "created_at", "id"], name="asset_tenant_newest"),
            models.Index(fields=["created_at", "id"], name="asset_newest"),
            # A status across tenants, newest first (the API's ?status= for platform
            # callers, an operator's console filter): asset_newest served it by dropping
            # every other status, and for a rare status PostgreSQL scanned and sorted the
            # whole table instead. Status is in the partial indexes' conditions above, so
            # changing it was never a HOT update: this costs an entry, not HOT.
            models.Index(fields=["status", "created_at", "id"], name="asset_status_newest"),
            # The console's search finds an asset by its exact name, and by the start of
            # its name in any case (name_folded).
            models.Index(fields=["name"], name="asset_name"),
            models.Index(fields=["name_folded"], name="asset_name_prefix"),
            # And by names like it among those of the same first character
            # (apps.core.search.named): asset_name_trgm, and asset_name_tenant_trgm for
            # a tenant's search, each leading with name_folded.
            *name_indexes("name", prefix="asset_name", folded="name_folded", tenant="tenant"),
        ]
        constraints = [
            # A workflow reference only on an asset that went through a request.
            models.CheckConstraint(
                condition=Q(workflow_instance_id__isnull=True) | ~Q(status="draft"),
                name="asset_workflow_reference_after_request",
            ),
            # One asset waits on an instance: its callbacks decide that asset and no
            # other, in no other tenant. Only the live link (workflow_managed's rows):
            # a decided or re-requested asset keeps its old id as history, and the
            # services refuse to link an instance any asset holds (workflow_instance_linked).
            models.UniqueConstraint(
                fields=["workflow_instance_id"],
                condition=Q(
                    workflow_instance_id__isnull=False,
                    status="requested",
                    workflow_link_stale=False,
                ),
                name=ONE_LIVE_LINK,
            ),
        ]
        permissions = [("approve_asset", "Approve or reject the asset")]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse_pk("assets:asset-detail", self.pk)

    @property
    def is_workflow_managed(self) -> bool:
        return (
            self.workflow_instance_id is not None
            and self.status == self.Status.REQUESTED
            and not self.workflow_link_stale
        )


class WorkflowCallback(models.Model):
    """A receipt for every callback the Workflow Service sent, and what came of it."""

    class Outcome(models.TextChoices):
        PENDING = "pending", "Pending"
        APPLIED = "applied", "Applied"
        IGNORED = "ignored", "Ignored (already decided)"
        UNKNOWN_INSTANCE = "unknown_instance", "Unknown instance"

    class Resolution(models.TextChoices):
        NONE = "", "None"
        LINKED = "linked", "Linked to an asset"
        DISMISSED = "dismissed", "Dismissed"

    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # The asset the instance belonged to when the callback came: receipts stay with
    # their asset across every instance it ever had. An identifier, as the instance id
    # is: a receipt outlives a deleted asset and may be platform-wide (unknown instance).
    asset_id = models.UUIDField(null=True, blank=True, db_index=True)
    workflow_instance_id = models.UUIDField(db_index=True)
    decision = models.CharField(max_length=16)
    reason = models.TextField(blank=True)
    callback_id = models.CharField(max_length=100, blank=True)
    outcome = models.CharField(max_length=20, choices=Outcome.choices, default=Outcome.PENDING)
    received_at = models.DateTimeField(default=timezone.now)
    applied_at = models.DateTimeField(null=True, blank=True)
    # An unknown-instance receipt waits on a person: linked to an asset, or dismissed.
    resolution = models.CharField(
        max_length=16, choices=Resolution.choices, blank=True, default="", db_default=""
    )
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.CharField(max_length=150, blank=True, default="", db_default="")
    resolution_reason = models.TextField(blank=True, default="", db_default="")
    linked_asset_id = models.UUIDField(null=True, blank=True)

    class Meta:
        ordering = ["-received_at", "-id"]
        indexes = [
            # The attention queue's unknown-instance receipts nobody has resolved yet.
            models.Index(
                fields=["received_at"],
                condition=Q(outcome="unknown_instance", resolution=""),
                name="assets_callback_unresolved",
            ),
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
