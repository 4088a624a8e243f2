"""The topic catalog: which services produce and consume which topics, and how.

Platform-wide reference data (no tenant): the schema-registry issue extends it with
schema versions and consumer acknowledgements.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q
from django.utils import timezone


class Service(models.Model):
    """A platform service that produces or consumes events (Steward itself included)."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Topic(models.Model):
    """A named stream of events of one kind of aggregate (`assets.asset`, …)."""

    name = models.CharField(
        max_length=100,
        unique=True,
        help_text="Dotted lower-case name, e.g. assets.asset.",
    )
    description = models.CharField(max_length=255, blank=True)
    producers = models.ManyToManyField(Service, related_name="produces", blank=True)
    current_schema_version = models.PositiveIntegerField(default=1)
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(name__regex=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$"),
                name="topic_dotted_name",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def producer_names(self) -> str:
        # from the prefetch in selectors.topic_list(): no query per row
        return ", ".join(sorted(p.name for p in self.producers.all())) or "—"


class Subscription(models.Model):
    """A consumer of a topic and the transport that reaches it.

    - `redis_stream`: the consumer reads the topic's stream with its own consumer
      group (named after the consumer); Steward keeps the group in place. Steward's
      own consumers are subscriptions of this kind too.
    - `webhook`: Steward POSTs each envelope, signed, to `endpoint`; the signing
      secret is a *reference* (`secret_ref`) resolved at delivery time, never stored.
    """

    class Transport(models.TextChoices):
        REDIS_STREAM = "redis_stream", "Redis stream"
        WEBHOOK = "webhook", "Signed webhook"

    consumer = models.ForeignKey(Service, on_delete=models.PROTECT, related_name="subscriptions")
    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="subscriptions")
    transport = models.CharField(max_length=16, choices=Transport.choices)
    endpoint = models.URLField(max_length=500, blank=True)
    secret_ref = models.CharField(
        max_length=200,
        blank=True,
        help_text="Where the webhook signing secret lives, e.g. env:ORDERS_WEBHOOK_SECRET.",
    )
    is_active = models.BooleanField(default=True)
    # Delivery health, kept by the runner: exponential back-off per subscription.
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    last_delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["topic__name", "consumer__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["consumer", "topic", "transport"], name="subscription_unique"
            ),
            models.CheckConstraint(
                condition=~Q(transport="webhook") | (~Q(endpoint="") & ~Q(secret_ref="")),
                name="subscription_webhook_needs_endpoint_and_secret",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.consumer} ← {self.topic} ({self.transport})"

    @property
    def group_name(self) -> str:
        """The Redis consumer group this subscription reads through."""
        if self.transport == self.Transport.WEBHOOK:
            return f"webhook.{self.pk}"
        return self.consumer.name
