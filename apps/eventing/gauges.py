"""Eventing's gauges at `/metrics` (apps.core.metrics): the outbox backlog, deliveries
per subscription, each consumer group's lag, dead letters, the inbox and unsettled
effects."""

from __future__ import annotations

from datetime import timedelta

from django.db import connection
from django.db.models import Count, Sum
from django.utils import timezone

from apps.core.counting import COUNTED_EXACTLY, table_estimate
from apps.core.metrics import gauge, gauge_by
from apps.eventing.lag import LAG_COUNTED, consumer_lag
from apps.eventing.models import DeadLetter, DeliveryCount, InboxEntry, UncertainEffect
from apps.eventing.selectors import outbox_backlog


def deliveries_last_hour() -> list[tuple[list[str], dict]]:
    """(consumer, topic) with the hour's delivered and failed counts, per subscription."""
    hour = DeliveryCount.objects.filter(minute__gte=timezone.now() - timedelta(hours=1))
    per_subscription = hour.values("subscription__consumer__name", "subscription__topic__name")
    per_subscription = per_subscription.annotate(ok=Sum("delivered"), bad=Sum("failed"))
    return [
        (
            [r["subscription__consumer__name"] or "streams", r["subscription__topic__name"] or ""],
            r,
        )
        for r in per_subscription
    ]


def inbox_estimate() -> int:
    with connection.cursor() as cursor:
        # An estimate (the planner's): counting a large inbox at every scrape would not be.
        return table_estimate(cursor, InboxEntry._meta.db_table)


def collect():
    outbox = outbox_backlog()
    yield gauge(
        "steward_outbox_backlog",
        f"Events waiting to be dispatched (counted up to {COUNTED_EXACTLY:,};"
        " the planner's estimate above).",
        outbox.waiting,
    )
    yield gauge(
        "steward_outbox_oldest_age_seconds",
        "Age of the oldest event waiting to be dispatched.",
        outbox.oldest_age_seconds or 0.0,
    )
    deliveries = deliveries_last_hour()
    yield gauge(
        "steward_deliveries_last_hour",
        "Events delivered in the last hour, per subscription (consumer, topic).",
        [(key, r["ok"] or 0) for key, r in deliveries],
        labels=["consumer", "topic"],
    )
    yield gauge(
        "steward_delivery_failures_last_hour",
        "Failed delivery attempts in the last hour, per subscription (consumer, topic).",
        [(key, r["bad"] or 0) for key, r in deliveries],
        labels=["consumer", "topic"],
    )
    yield gauge(
        "steward_consumer_lag",
        "Events each consumer group is behind on its topic's stream, waiting or delivered"
        f" and not acknowledged (the eventing page's lag; counted up to {LAG_COUNTED:,}).",
        [([lag.consumer, lag.topic], lag.behind) for lag in consumer_lag()],
        labels=["consumer", "topic"],
    )
    yield gauge_by(
        "steward_dead_letters",
        "Dead letters by state.",
        DeadLetter.objects.values_list("state").annotate(n=Count("id")),
        "state",
    )
    yield gauge(
        "steward_inbox_entries_estimate",
        "Handled-event records kept for deduplication (estimate).",
        inbox_estimate(),
    )
    yield gauge_by(
        "steward_uncertain_effects",
        "Calls to other systems whose outcome is not settled, by state.",
        UncertainEffect.objects.filter(state__in=["pending", "uncertain"])
        .values_list("state")
        .annotate(n=Count("id")),
        "state",
    )
