from __future__ import annotations

import uuid

from django.contrib.postgres.indexes import BrinIndex
from django.db import models
from django.db.models import Q
from django.db.models.functions import Now
from django.utils import timezone

from apps.core.transitions import Transitions
from apps.core.urls import reverse_pk
from apps.tenancy.models import Tenant

# Events are dispatched in lanes: every aggregate hashes to one lane, and a lane is
# leased by one dispatcher at a time, so events of one aggregate leave in the order
# they were written while different lanes go out in parallel.
LANES = 16


class EnvelopeColumns(models.Model):
    """The envelope's columns, as the outbox and the dispatched log both hold them."""

    topic = models.CharField(max_length=100)
    event_type = models.CharField(max_length=100)
    schema_version = models.PositiveIntegerField()
    aggregate_type = models.CharField(max_length=64)
    aggregate_id = models.CharField(max_length=64)
    correlation_id = models.CharField(max_length=64)
    causation_id = models.CharField(max_length=64, blank=True)
    payload = models.JSONField()

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.topic}/{self.event_type} {self.event_id}"


class OutboxEvent(EnvelopeColumns):
    """An envelope written in the producer's transaction, waiting to be dispatched."""

    id = models.BigAutoField(primary_key=True)  # the write order
    event_id = models.UUIDField(unique=True, default=uuid.uuid4)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    lane = models.PositiveSmallIntegerField()
    occurred_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["lane", "id"], name="outbox_lane_order")]


class DispatchLane(models.Model):
    """Lease and back-off state of one dispatch lane (rows 0..LANES-1, made by a migration)."""

    lane = models.PositiveSmallIntegerField(primary_key=True)
    leased_until = models.DateTimeField(default=timezone.now)
    lease_token = models.UUIDField(null=True, blank=True)
    last_claimed_at = models.DateTimeField(null=True, blank=True)
    failures = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    last_error = models.CharField(max_length=500, blank=True)
    # The highest outbox id of this lane published and logged (apps.eventing.redrive):
    # Redis keeps its own copy beside the streams, and one that is behind this one
    # lost entries.
    published_through = models.BigIntegerField(default=0, db_default=0)

    class Meta:
        ordering = ["lane"]

    def __str__(self) -> str:
        return f"lane {self.lane}"


class DispatchedEvent(EnvelopeColumns):
    """An envelope the dispatcher published, kept for the inbox window so that a Redis
    that lost its streams can be given them again (apps.eventing.redrive).

    The outbox row moved, in the statement that deletes it: same id (the write order),
    same envelope. The payload is kept whole because a consumer needs the event as it
    was, and nothing else in Steward still holds it. No index but the key, the tenant's
    (tenant deletion) and a BRIN on the time (the retention sweep): the table is written
    at the dispatcher's rate and read only after a loss.
    """

    id = models.BigIntegerField(primary_key=True)
    lane = models.PositiveSmallIntegerField()
    dispatched_at = models.DateTimeField(default=timezone.now, db_default=Now())
    event_id = models.UUIDField()
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    occurred_at = models.DateTimeField()

    class Meta:
        indexes = [BrinIndex(fields=["dispatched_at"], name="dispatched_event_time")]


class DeliveryCount(models.Model):
    """Deliveries per minute: to the streams (no subscription) or to one subscription."""

    minute = models.DateTimeField()
    subscription = models.ForeignKey(
        "registry.Subscription", null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    delivered = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["minute", "subscription"],
                name="delivery_count_unique_minute",
                nulls_distinct=False,
            ),
        ]

    def __str__(self) -> str:
        return f"{self.minute:%H:%M} {self.subscription_id or 'streams'}: {self.delivered}"


class InboxEntry(models.Model):
    """An event a Steward consumer has handled; written with the handler's effects."""

    consumer = models.CharField(max_length=100)
    event_id = models.UUIDField()
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    handled_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["consumer", "event_id"], name="inbox_once"),
        ]
        verbose_name_plural = "inbox entries"

    def __str__(self) -> str:
        return f"{self.consumer} {self.event_id}"


class DeadLetter(models.Model):
    """An envelope a subscription could not take after its attempts; kept for an operator."""

    class State(models.TextChoices):
        DEAD = "dead", "Dead"
        REPLAYING = "replaying", "Replay queued"
        REPLAYED = "replayed", "Replayed"
        DISCARDED = "discarded", "Discarded"

    # An operator replays or discards a dead letter, once; a queued replay is delivered
    # (a failure makes a new dead letter, this one stays as history).
    TRANSITIONS = Transitions(
        field="state",
        initial=[State.DEAD],
        moves={
            State.DEAD: {State.REPLAYING, State.DISCARDED},
            State.REPLAYING: {State.REPLAYED},
            State.REPLAYED: set(),
            State.DISCARDED: set(),
        },
    )

    subscription = models.ForeignKey(
        "registry.Subscription", on_delete=models.PROTECT, related_name="dead_letters"
    )
    event_id = models.UUIDField()
    topic = models.CharField(max_length=100)
    event_type = models.CharField(max_length=100)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    envelope = models.JSONField()
    error = models.TextField()
    attempts = models.PositiveIntegerField()
    state = models.CharField(max_length=16, choices=State.choices, default=State.DEAD)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)
    resolved_at = models.DateTimeField(null=True, blank=True)
    resolved_by = models.CharField(max_length=150, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        # The console's search finds an event's dead letters by event id, whatever the
        # subscription (dead_letter_once covers only the dead, per subscription).
        indexes = [models.Index(fields=["event_id"], name="dead_letter_event")]
        constraints = [
            # An envelope is dead at most once per subscription at a time.
            models.UniqueConstraint(
                fields=["subscription", "event_id"],
                condition=models.Q(state="dead"),
                name="dead_letter_once",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.topic}/{self.event_type} {self.event_id} ({self.state})"

    def get_absolute_url(self) -> str:
        return reverse_pk("eventing:dead-letter-detail", self.pk)

    @property
    def is_dead(self) -> bool:
        return self.state == self.State.DEAD

    @property
    def short_error(self) -> str:
        return self.error if len(self.error) <= 80 else self.error[:79] + "…"


class UncertainEffect(models.Model):
    """A call to another system whose outcome must be known before it is trusted.

    Written (pending) before the call; settled by the caller, or, when the call timed
    out, marked uncertain and settled later by the reconciler asking the other side.
    """

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        UNCERTAIN = "uncertain", "Uncertain"

    # An uncertain effect stays uncertain while the other side does not know yet (each
    # check backs off further), until the reconciler learns how it ended, or a person
    # settles it by hand once it is past the reconciliation limit (escalated_at).
    TRANSITIONS = Transitions(
        field="state",
        initial=[State.PENDING],
        moves={
            State.PENDING: {State.SUCCEEDED, State.FAILED, State.UNCERTAIN},
            State.UNCERTAIN: {State.UNCERTAIN, State.SUCCEEDED, State.FAILED},
            State.SUCCEEDED: set(),
            State.FAILED: set(),
        },
    )

    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    actor = models.CharField(max_length=100, help_text="The consumer or producer that called.")
    event_id = models.UUIDField(null=True, blank=True)
    target_system = models.CharField(max_length=64)
    operation = models.CharField(max_length=64)
    external_ref = models.CharField(
        max_length=200, help_text="How the other side finds the call: an idempotency key or id."
    )
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_check_at = models.DateTimeField(null=True, blank=True, db_index=True)
    result = models.JSONField(default=dict, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    # The reconciler's checks since reconciliation (re)started, and when it did: the
    # limits (STEWARD_EFFECT_MAX_CHECKS, STEWARD_EFFECT_MAX_AGE_SECONDS) count from here,
    # so a person's "retry now" gives the effect a fresh round.
    checks = models.PositiveIntegerField(default=0, db_default=0)
    reconcile_since = models.DateTimeField(default=timezone.now, db_default=Now())
    # Set when the effect left reconciliation at its limit: it waits on a person.
    escalated_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["target_system", "operation", "external_ref"], name="uncertain_effect_once"
            ),
        ]
        indexes = [
            models.Index(
                fields=["escalated_at"],
                condition=Q(state="uncertain", escalated_at__isnull=False),
                name="uncertain_effect_escalated",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.target_system}.{self.operation} {self.external_ref} ({self.state})"


class RecentEvent(models.Model):
    """The last events seen on the streams, kept by Steward's own `steward.recent-events`
    consumer for the console; old rows are swept with the inbox."""

    event_id = models.UUIDField(unique=True)
    topic = models.CharField(max_length=100)
    event_type = models.CharField(max_length=100)
    tenant = models.ForeignKey(
        Tenant, null=True, blank=True, on_delete=models.CASCADE, related_name="+"
    )
    aggregate_type = models.CharField(max_length=64)
    aggregate_id = models.CharField(max_length=64)
    occurred_at = models.DateTimeField()
    received_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-received_at", "-id"]

    def __str__(self) -> str:
        return f"{self.topic}/{self.event_type} {self.event_id}"

    @property
    def aggregate_label(self) -> str:
        return f"{self.aggregate_type}:{self.aggregate_id}"
