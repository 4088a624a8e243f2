"""Reads for the eventing page and API: backlog, rates, failures, inboxes, effects."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from django.db import connection
from django.db.models import QuerySet, Sum
from django.utils import timezone

from apps.core import counting
from apps.core.scope import system_scope
from apps.eventing.models import (
    DeadLetter,
    DeliveryCount,
    DispatchLane,
    InboxEntry,
    OutboxEvent,
    RecentEvent,
    UncertainEffect,
)
from apps.registry.models import Service, Subscription, Topic

OUTBOX = OutboxEvent._meta.db_table

# Waiting envelopes, counted no further than the bound (apps.core.counting).
BACKLOG_COUNT = f"SELECT count(*) FROM (SELECT FROM {OUTBOX} LIMIT %s) AS waiting"  # noqa: S608
# The age in seconds of the oldest waiting envelope, by write order: found through the
# primary key, not a scan.
_AGE = "greatest(0, extract(epoch FROM clock_timestamp() - occurred_at))"
OLDEST_AGE = f"SELECT {_AGE} FROM {OUTBOX} ORDER BY id LIMIT 1"  # noqa: S608


class Backlog(NamedTuple):
    waiting: int
    estimated: bool  # counted exactly up to apps.core.counting's bound, estimated above
    oldest_age_seconds: float | None


def outbox_backlog() -> Backlog:
    """How many envelopes wait, and the age in seconds of the oldest."""
    with system_scope(reads_only=True), connection.cursor() as cursor:
        if counting.counted_past_bound(BACKLOG_COUNT):
            counted = counting.COUNTED_EXACTLY + 1
        else:
            cursor.execute(BACKLOG_COUNT, [counting.COUNTED_EXACTLY + 1])
            counted = counting.read_count(BACKLOG_COUNT, cursor.fetchone()[0])
        waiting = counting.bounded(counted, lambda: counting.table_estimate(cursor, OUTBOX))
        cursor.execute(OLDEST_AGE)
        row = cursor.fetchone()
    return Backlog(waiting.n, waiting.estimated, float(row[0]) if row else None)


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


MINUTES = 60


def delivery_rate(
    *, minutes: int = MINUTES, subscription_id=None, streams: bool = True
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
        r["minute"]: (r["d"], r["f"])
        for r in rows.values("minute").annotate(d=Sum("delivered"), f=Sum("failed")).order_by()
    }
    return _minute_series(start, minutes, by_minute)


MINUTE = timedelta(minutes=1)


def _minute_series(start: datetime, minutes: int, by_minute: dict) -> list[MinuteRate]:
    """Every minute from `start`, zeros where `by_minute` ({minute: (delivered, failed)})
    has none."""
    series = []
    for step in range(minutes):
        minute = start + MINUTE * step
        delivered, failed = by_minute.get(minute, (0, 0))
        series.append(MinuteRate(minute, delivered, failed))
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
        return _inbox_sizes(cursor, cursor.fetchall())


def _inbox_sizes(cursor, counted) -> dict[str, counting.Count]:
    """`_INBOX_SIZES`'s rows (consumer, count up to the bound) as bounded counts; the
    planner is asked only for the consumers past the bound (inbox_sizes says how)."""
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


# The overview's figures in one statement, each a scalar sub-select (one round trip, not
# nine): the outbox backlog as `outbox_backlog` counts it for the dashboard and /metrics,
# bounded, with the planner's estimate beside it (a catalog read, cheaper than asking
# again when the count passes the bound) and the oldest's age; the lanes backing off;
# the streams' deliveries per minute; failed deliveries to subscriptions; dead letters;
# effects by state; each inbox counted up to the bound. Rows as JSON: one value each.
_FIGURES = f"""
    ({{backlog}}), ({counting.TABLE_ESTIMATE}), ({OLDEST_AGE}),
        (SELECT count(*) FROM {DispatchLane._meta.db_table} WHERE next_attempt_at > %s),
        (SELECT json_agg(json_build_array(extract(epoch FROM minute), d, f))
         FROM (SELECT minute, sum(delivered) AS d, sum(failed) AS f
               FROM {DeliveryCount._meta.db_table}
               WHERE minute >= %s AND subscription_id IS NULL GROUP BY minute) AS streams),
        (SELECT sum(failed) FROM {DeliveryCount._meta.db_table}
         WHERE minute >= %s AND subscription_id IS NOT NULL),
        (SELECT count(*) FROM {DeadLetter._meta.db_table} WHERE state = %s),
        (SELECT json_object_agg(state, n)
         FROM (SELECT state, count(*) AS n FROM {UncertainEffect._meta.db_table}
               GROUP BY state) AS effects),
        (SELECT json_agg(json_build_array(name, n) ORDER BY name)
         FROM ({_INBOX_SIZES}) AS inboxes(name, n))
"""  # noqa: S608 - table names only
# The backlog is counted up to the bound (its parameter), unless a count went past it in
# the last few seconds (apps.core.counting): then the parameter, one past the bound, is
# the answer. Two statements, each prepared with a plan of its own (one whose LIMIT
# varied would be planned again on every run: most of PostgreSQL's time for the page).
_BACKLOG = {False: BACKLOG_COUNT, True: "SELECT %s::bigint"}

# The page's charts read in the same statement: the events received per minute and topic
# since the hour's first minute (apps.eventing.charts.throughput_per_topic, as its
# `_received_per_minute` groups them), and the topics whose streams' lag it draws; and
# its two tables: the subscriptions, the least healthy first, and the latest events.
# As querysets, those tables would cost the page two more round trips and the ORM's
# building of their SQL, 30 % of the page's web process with no row at all.
SUBSCRIPTIONS_SHOWN, LATEST_SHOWN = 50, 10
_OVERVIEW_PAGE = f"""SELECT {_FIGURES},
    (SELECT json_agg(json_build_array(topic, extract(epoch FROM minute), n))
     FROM (SELECT topic, date_trunc('minute', received_at) AS minute, count(*) AS n
           FROM {RecentEvent._meta.db_table} WHERE received_at >= %s
           GROUP BY topic, minute) AS received),
    (SELECT array_agg(name) FROM {Topic._meta.db_table}),
    (SELECT json_agg(json_build_array(topic, consumer, transport, failures, last_error,
                                      last_delivered_at, dead)
                     ORDER BY failures DESC, topic, consumer, id)
     FROM (SELECT s.id, t.name AS topic, c.name AS consumer, s.transport,
                  s.consecutive_failures AS failures, s.last_error, s.last_delivered_at,
                  (SELECT count(*) FROM {DeadLetter._meta.db_table} d
                   WHERE d.subscription_id = s.id AND d.state = %s) AS dead
           FROM {Subscription._meta.db_table} s
           JOIN {Topic._meta.db_table} t ON t.id = s.topic_id
           JOIN {Service._meta.db_table} c ON c.id = s.consumer_id
           ORDER BY s.consecutive_failures DESC, t.name, c.name, s.id
           LIMIT {SUBSCRIPTIONS_SHOWN}) AS health),
    (SELECT json_agg(json_build_array(received_at, topic, event_type)
                     ORDER BY received_at DESC, id DESC)
     FROM (SELECT id, received_at, topic, event_type FROM {RecentEvent._meta.db_table}
           ORDER BY received_at DESC, id DESC LIMIT {LATEST_SHOWN}) AS latest)
"""  # noqa: S608 - table names and constants only
# {remembered past the bound: statement}
_OVERVIEW_FIGURES = {
    remembered: f"SELECT {_FIGURES}".replace("{backlog}", backlog)
    for remembered, backlog in _BACKLOG.items()
}
_OVERVIEW_PAGES = {
    remembered: _OVERVIEW_PAGE.replace("{backlog}", backlog)
    for remembered, backlog in _BACKLOG.items()
}


@dataclass(frozen=True)
class SubscriptionHealth:
    """One row of the overview's subscriptions table."""

    topic: str
    consumer: str
    transport: str
    transport_label: str
    consecutive_failures: int
    last_error: str
    last_delivered_at: datetime | None
    dead_count: int  # its dead letters waiting on an operator


@dataclass(frozen=True)
class LatestEvent:
    received_at: datetime
    topic: str
    event_type: str


@dataclass(frozen=True)
class OverviewPage:
    overview: Overview
    received_per_topic: dict[str, dict[datetime, int]]  # {topic: {minute: events}}
    topic_names: list[str]
    subscriptions: list[SubscriptionHealth]  # the least healthy first, at most 50
    latest: list[LatestEvent]  # the last 10 received


def _json(value, empty):
    # psycopg decodes `json` itself; Django has it leave `jsonb` as text.
    if value is None:
        return empty
    return json.loads(value) if isinstance(value, str) else value


def overview() -> Overview:
    """The eventing figures the API answers (and the page shows, with overview_page)."""
    return _overview(page=False)[0]


def _moment(text: str | None) -> datetime | None:
    # json_build_array writes a timestamptz as ISO 8601 with its offset
    return None if text is None else datetime.fromisoformat(text)


_TRANSPORTS = dict(Subscription.Transport.choices)


def overview_page() -> OverviewPage:
    """The overview, and what the eventing page's charts and tables read, in one
    statement."""
    figures, (received, topics, health, latest) = _overview(page=True)
    per_topic: dict[str, dict[datetime, int]] = defaultdict(dict)
    for topic, epoch, n in _json(received, []):
        per_topic[topic][datetime.fromtimestamp(epoch, UTC)] = n
    subscriptions = [
        SubscriptionHealth(
            topic=topic,
            consumer=consumer,
            transport=transport,
            transport_label=str(_TRANSPORTS.get(transport, transport)),
            consecutive_failures=failures,
            last_error=last_error,
            last_delivered_at=_moment(delivered),
            dead_count=dead,
        )
        for topic, consumer, transport, failures, last_error, delivered, dead in _json(health, [])
    ]
    events = [
        LatestEvent(received_at=_moment(at), topic=topic, event_type=event_type)
        for at, topic, event_type in _json(latest, [])
    ]
    return OverviewPage(figures, dict(per_topic), topics or [], subscriptions, events)


def _overview(*, page: bool) -> tuple[Overview, list]:
    bound = counting.COUNTED_EXACTLY + 1
    now = timezone.now()
    start = now.replace(second=0, microsecond=0) - timedelta(minutes=MINUTES - 1)
    params = [
        bound, OUTBOX, now, start, now - timedelta(hours=1),
        DeadLetter.State.DEAD, bound,
    ]  # fmt: skip
    with system_scope(reads_only=True), connection.cursor() as cursor:
        remembered = counting.counted_past_bound(BACKLOG_COUNT)
        if page:
            cursor.execute(_OVERVIEW_PAGES[remembered], [*params, start, DeadLetter.State.DEAD])
        else:
            cursor.execute(_OVERVIEW_FIGURES[remembered], params)
        row = cursor.fetchone()
        counted, estimate, oldest, lanes, streams, failed, dead, effects, inboxes = row[:9]
        if not remembered:
            counted = counting.read_count(BACKLOG_COUNT, counted)
        inbox = _inbox_sizes(cursor, _json(inboxes, []))
    backlog = counting.bounded(counted, lambda: estimate)
    by_minute = {datetime.fromtimestamp(epoch, UTC): (d, f) for epoch, d, f in _json(streams, [])}
    series = _minute_series(start, MINUTES, by_minute)
    return (
        Overview(
            backlog=backlog.n,
            backlog_estimated=backlog.estimated,
            oldest_age_seconds=float(oldest) if oldest is not None else None,
            lanes_backing_off=lanes,
            delivered_last_hour=sum(point.delivered for point in series),
            failed_last_hour=failed or 0,
            per_minute=series,
            dead_letters=dead,
            inbox_sizes={consumer: size.n for consumer, size in inbox.items()},
            inbox_sizes_estimated=[consumer for consumer, size in inbox.items() if size.estimated],
            effects=_json(effects, {}),
        ),
        list(row[9:]),
    )


def dead_letter_list() -> QuerySet[DeadLetter]:
    return DeadLetter.objects.select_related(
        "subscription", "subscription__consumer", "subscription__topic", "tenant"
    )


def dead_letters_visible_to(actor) -> QuerySet[DeadLetter]:
    """The dead letters a caller may see and act on: a service account, those of its
    own service's subscriptions only (the envelopes and delivery errors are the
    consumer's business, and another's is answered as one that does not exist);
    operators and Steward, all."""
    found = dead_letter_list()
    account = actor.service_account
    return found if account is None else found.filter(subscription__consumer__name=account.name)


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
