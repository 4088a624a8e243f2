"""Reads for the eventing page and API: backlog, rates, failures, inboxes, effects."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection
from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from apps.core import counting
from apps.core.scope import system_scope
from apps.eventing.dispatcher import outbox_backlog
from apps.eventing.models import (
    DeadLetter,
    DeliveryCount,
    DispatchLane,
    InboxEntry,
    RecentEvent,
    UncertainEffect,
)
from apps.registry.models import Subscription
from apps.registry.selectors import subscription_list


@dataclass(frozen=True)
class MinuteRate:
    minute: datetime
    delivered: int
    failed: int


@dataclass(frozen=True)
class Overview:
    backlog: int
    backlog_estimated: bool
    oldest_age_seconds: float | None
    lanes_backing_off: int
    delivered_last_hour: int
    failed_last_hour: int
    per_minute: list[MinuteRate]
    dead_letters: int
    inbox_sizes: dict[str, int]
    inbox_sizes_estimated: list[str]  # the consumers whose size is the planner's estimate
    effects: dict[str, int]


def delivery_rate(
    *, minutes: int = 60, subscription_id=None, streams: bool = True
) -> list[MinuteRate]:
    """Deliveries per minute over the last `minutes`, every minute present (zeros too)."""
    now = timezone.now().replace(second=0, microsecond=0)
    start = now - timedelta(minutes=minutes - 1)
    rows = DeliveryCount.objects.filter(minute__gte=start)
    rows = (
        rows.filter(subscription__isnull=True)
        if streams
        else rows.filter(subscription_id=subscription_id)
    )
    by_minute = {
        r["minute"]: r
        for r in rows.values("minute").annotate(d=Sum("delivered"), f=Sum("failed")).order_by()
    }
    series = []
    for step in range(minutes):
        minute = start + timedelta(minutes=step)
        row = by_minute.get(minute)
        series.append(MinuteRate(minute, row["d"] if row else 0, row["f"] if row else 0))
    return series


INBOX = InboxEntry._meta.db_table

# Each consumer's inbox rows, counted up to the bound: the consumers found by walking the
# `inbox_once` index (consumer, event_id) from one name to the next, and each counted in
# that index's order, so that neither reads more than the bound of any consumer's rows
# (unordered, the planner may scan the table for a consumer, through everyone else's).
_INBOX_SIZES = f"""
    WITH RECURSIVE consumers(name) AS (
        (SELECT consumer FROM {INBOX} ORDER BY consumer LIMIT 1)
        UNION ALL
        SELECT (SELECT i.consumer FROM {INBOX} i WHERE i.consumer > c.name
                ORDER BY i.consumer LIMIT 1)
        FROM consumers c WHERE c.name IS NOT NULL
    )
    SELECT name, (SELECT count(*) FROM (SELECT FROM {INBOX} i WHERE i.consumer = c.name
                                        ORDER BY i.event_id LIMIT %s) AS kept)
    FROM consumers c WHERE name IS NOT NULL ORDER BY name
"""  # noqa: S608 - table names only


def _planned_rows(cursor, sql: str, params=()) -> float:
    cursor.execute("EXPLAIN (FORMAT JSON) " + sql, params)
    plan = cursor.fetchone()[0]
    return (json.loads(plan) if isinstance(plan, str) else plan)[0]["Plan"]["Plan Rows"]


def inbox_sizes() -> dict[str, counting.Count]:
    """How many handled events each consumer's inbox remembers. Past the bound, the
    consumer's share of the planner's estimate for the table, as the planner judges it
    from ANALYZE's statistics (pg_stats shows them to no one under row-level security;
    the planner uses them). The row-level policy's own selectivity is in both the
    consumer's figure and the table's, so their ratio leaves it out."""
    with system_scope(reads_only=True), connection.cursor() as cursor:
        cursor.execute(_INBOX_SIZES, [counting.COUNTED_EXACTLY + 1])
        counted = cursor.fetchall()
        table: list[float] = []

        def estimate(consumer: str) -> float:
            if not table:
                everyone = _planned_rows(cursor, f"SELECT FROM {INBOX}")  # noqa: S608
                table.extend([counting.table_estimate(cursor, INBOX), max(everyone, 1.0)])
            theirs = _planned_rows(
                cursor,
                f"SELECT FROM {INBOX} WHERE consumer = %s",  # noqa: S608
                [consumer],
            )
            return table[0] * theirs / table[1]

        return {
            consumer: counting.bounded(n, lambda consumer=consumer: estimate(consumer))
            for consumer, n in counted
        }


def overview() -> Overview:
    backlog = outbox_backlog()
    series = delivery_rate()
    inbox = inbox_sizes()
    with system_scope(reads_only=True):
        effects = dict(
            UncertainEffect.objects.values_list("state").annotate(n=Count("id")).order_by()
        )
        dead = DeadLetter.objects.filter(state=DeadLetter.State.DEAD).count()
    failed = DeliveryCount.objects.filter(
        minute__gte=timezone.now() - timedelta(hours=1), subscription__isnull=False
    ).aggregate(f=Sum("failed"))["f"]
    return Overview(
        backlog=backlog.waiting,
        backlog_estimated=backlog.estimated,
        oldest_age_seconds=backlog.oldest_age_seconds,
        lanes_backing_off=DispatchLane.objects.filter(next_attempt_at__gt=timezone.now()).count(),
        delivered_last_hour=sum(point.delivered for point in series),
        failed_last_hour=failed or 0,
        per_minute=series,
        dead_letters=dead,
        inbox_sizes={consumer: size.n for consumer, size in inbox.items()},
        inbox_sizes_estimated=[consumer for consumer, size in inbox.items() if size.estimated],
        effects=effects,
    )


def subscription_health() -> QuerySet[Subscription]:
    """The registry's subscriptions, the least healthy first, each with its dead letters."""
    dead = Q(dead_letters__state=DeadLetter.State.DEAD)
    return (
        subscription_list()
        .annotate(dead_count=Count("dead_letters", filter=dead, distinct=True))
        .order_by("-consecutive_failures", "topic__name", "consumer__name")
    )


def dead_letter_list() -> QuerySet[DeadLetter]:
    return DeadLetter.objects.select_related(
        "subscription", "subscription__consumer", "subscription__topic", "tenant"
    )


def dead_letters_waiting() -> QuerySet[DeadLetter]:
    """Dead letters no one has replayed or discarded yet: each waits on an operator."""
    return dead_letter_list().filter(state=DeadLetter.State.DEAD).order_by("created_at", "id")


def uncertain_effect_list() -> QuerySet[UncertainEffect]:
    return UncertainEffect.objects.select_related("tenant")


def recent_event_list() -> QuerySet[RecentEvent]:
    return RecentEvent.objects.select_related("tenant")


def effects_needing_a_person() -> QuerySet[UncertainEffect]:
    """Uncertain effects that left reconciliation at its limit, oldest escalation first;
    each is resolved by apps.eventing.effects.effect_settle (done, with the other side's
    reference, or not done, with a reason) or effect_retry_now. Served by the partial
    index uncertain_effect_escalated."""
    return (
        uncertain_effect_list()
        .filter(state=UncertainEffect.State.UNCERTAIN, escalated_at__isnull=False)
        .order_by("escalated_at", "id")
    )
