"""Reads for the eventing page and API: backlog, rates, failures, inboxes, effects."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

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
    oldest_age_seconds: float | None
    lanes_backing_off: int
    delivered_last_hour: int
    failed_last_hour: int
    per_minute: list[MinuteRate]
    dead_letters: int
    inbox_sizes: dict[str, int]
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


def overview() -> Overview:
    backlog, oldest = outbox_backlog()
    series = delivery_rate()
    with system_scope():
        inbox = dict(
            InboxEntry.objects.values_list("consumer").annotate(n=Count("id")).order_by("consumer")
        )
        effects = dict(
            UncertainEffect.objects.values_list("state").annotate(n=Count("id")).order_by()
        )
        dead = DeadLetter.objects.filter(state=DeadLetter.State.DEAD).count()
    failed = DeliveryCount.objects.filter(
        minute__gte=timezone.now() - timedelta(hours=1), subscription__isnull=False
    ).aggregate(f=Sum("failed"))["f"]
    return Overview(
        backlog=backlog,
        oldest_age_seconds=oldest,
        lanes_backing_off=DispatchLane.objects.filter(next_attempt_at__gt=timezone.now()).count(),
        delivered_last_hour=sum(point.delivered for point in series),
        failed_last_hour=failed or 0,
        per_minute=series,
        dead_letters=dead,
        inbox_sizes=inbox,
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
