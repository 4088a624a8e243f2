"""Eventing's charts for the dashboard and the eventing page (reads only, in the
request's scope; drawn by apps.console.charts).

Where the figures come from, and why those sources:
- Events per minute: across tenants, the dispatcher's own per-minute counter of what it
  published to the streams (`DeliveryCount`, the rows without a subscription). A tenant
  sees its own events as Steward's `steward.recent-events` consumer received them
  (`RecentEvent`, row-level security choosing the tenant's): the counter has no tenant.
- Throughput per topic: `RecentEvent` by minute and topic, one grouped query. The
  dispatcher's counter is per subscription, not per topic, and a stream delivery has no
  subscription.
- Consumer lag: what Redis says now (`XINFO GROUPS` on each topic's stream, one
  pipelined round trip): entries not yet delivered to the group plus those delivered
  and not acknowledged.
- Lag over time: the minute's sample `eventing.periodic_sample_lag` writes beside the
  streams (apps.eventing.lag: a Redis hash a minute, kept two hours; over 24 hours or
  7 days, a hash a column holding each group's worst minute in it, kept as long as the
  range), read with the lag now in one script. It lives with what it measures: a Redis
  that lost its data lost the lag too, and the chart shows the gap instead of inventing
  figures.

The time charts span the last hour, 24 hours or 7 days (apps.console.charts.RANGES),
each as far as its figures are kept: the dispatcher's counts and the lag's worst of
each column are kept, received events as long as the inbox window (3 days by default).
Asked for further, a chart shows the longest span it has and says why
(`overview_charts`), rather than a stretch of empty columns that would read as no
traffic.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from datetime import timedelta
from functools import lru_cache

from django.conf import settings
from django.db.models import Count, DateTimeField, F, Func, Sum, Value
from django.db.models.functions import TruncMinute
from django.utils import timezone

from apps.console.charts import EPOCH, HOUR, RANGES, Chart, Range, Series, stacked_series
from apps.core import counting
from apps.core.scope import current_scope
from apps.eventing.lag import Lag, consumer_lag, lag_now_and_samples
from apps.eventing.models import DeliveryCount, OutboxEvent, RecentEvent
from apps.eventing.selectors import MINUTE, MinuteRate, delivery_rate, outbox_backlog

MINUTES = 60
# More topics than colours tell apart: the busiest are drawn, the rest summed.
TOPICS_DRAWN = 5
# Groups drawn; Steward's own consumers read every topic, so a platform has many.
LAG_SHOWN = 12
CONSUMERS_DRAWN = 5


def _minutes(now=None) -> list:
    now = (now or timezone.now()).replace(second=0, microsecond=0)
    start = now - MINUTE * (MINUTES - 1)
    return [start + MINUTE * step for step in range(MINUTES)]


def _labels(minutes) -> list[str]:
    """Each minute as the time axis names it ("14:05")."""
    return [_label(minute, minute.tzinfo) for minute in minutes]


# strftime cost more than anything else drawn per column (an overview page draws three
# charts of sixty), and every page drawn within a minute names the same minutes. The zone
# is part of the key: equal instants in two zones are equal keys but read differently.
@lru_cache(maxsize=512)
def _label(minute, zone) -> str:
    return f"{minute:%H:%M}"


def _received_kept() -> timedelta:
    # Received events (RecentEvent) are kept as long as the inbox window.
    return timedelta(hours=settings.STEWARD_EVENTING["INBOX_RETENTION_HOURS"])


def _within(kept: timedelta) -> tuple[Range, ...]:
    return tuple(r for r in RANGES if r.span <= kept)


def event_ranges() -> tuple[Range, ...]:
    """The ranges the events chart has data for: the dispatcher's counts are kept, a
    tenant's received events only as long as the inbox window (72 h by default)."""
    if current_scope().tenant_id is None:
        return RANGES
    return _within(_received_kept())


def events_per_minute(span: Range = HOUR) -> Chart:
    """The events of the last hour minute by minute, or of a longer `span` in wider
    columns (see the module's note on the sources); one grouped query whatever the span."""
    if span != HOUR:
        return _events_over(span)
    if current_scope().tenant_id is None:
        return published_chart(delivery_rate(minutes=MINUTES))
    minutes = _minutes()
    counts = _received_per_minute(minutes[0]).get("all", {})
    return Chart(
        key="events-per-minute",
        title="Events per minute, last hour",
        description="The tenant's events received on the streams each minute.",
        labels=_labels(minutes),
        series=[Series("received", [counts.get(minute, 0) for minute in minutes])],
        kind="columns",
    )


def _binned(rows, field: str, span: Range):
    """`rows` grouped by `span`'s columns: PostgreSQL bins `field` (date_bin, aligned
    as Range.buckets aligns them), so the rows read are a column each, not a minute each."""
    binned = Func(
        Value(span.step), F(field), Value(EPOCH), function="date_bin", output_field=DateTimeField()
    )
    return rows.annotate(bucket=binned).values("bucket").order_by()


def _events_over(span: Range) -> Chart:
    buckets = span.buckets(timezone.now())
    if current_scope().tenant_id is None:
        rows = DeliveryCount.objects.filter(subscription__isnull=True, minute__gte=buckets[0])
        counts = {
            r["bucket"]: (r["d"], r["f"])
            for r in _binned(rows, "minute", span).annotate(d=Sum("delivered"), f=Sum("failed"))
        }
        series = [
            Series("published", [counts.get(b, (0, 0))[0] for b in buckets]),
            Series("failed", [counts.get(b, (0, 0))[1] for b in buckets]),
        ]
        said = "Events the dispatcher published to the streams, and failures"
    else:
        rows = RecentEvent.objects.filter(received_at__gte=buckets[0])
        counts = {
            r["bucket"]: r["n"] for r in _binned(rows, "received_at", span).annotate(n=Count("id"))
        }
        series = [Series("received", [counts.get(b, 0) for b in buckets])]
        said = "The tenant's events received on the streams"
    return Chart(
        key="events-per-minute",
        title=f"Events {span.per}, {span.last}",
        description=f"{said}, {span.per}.",
        labels=[f"{b:{span.tick}}" for b in buckets],
        full_labels=[span.full_label(b) for b in buckets],
        series=series,
        kind="columns",
    )


def published_chart(rates: list[MinuteRate]) -> Chart:
    """The dispatcher's per-minute counts (apps.eventing.selectors.delivery_rate)."""
    return Chart(
        key="events-per-minute",
        title="Events per minute, last hour",
        description="Events the dispatcher published to the streams each minute, and failures.",
        labels=_labels(point.minute for point in rates),
        series=[
            Series("published", [point.delivered for point in rates]),
            Series("failed", [point.failed for point in rates]),
        ],
        kind="columns",
    )


def _received_per_minute(since, *, by_topic: bool = False) -> dict[str, dict]:
    """{topic (or "all"): {minute: events received}} since `since`: one grouped query."""
    rows = RecentEvent.objects.filter(received_at__gte=since).annotate(
        minute=TruncMinute("received_at")
    )
    rows = rows.values_list("minute", "topic") if by_topic else rows.values_list("minute")
    counts: dict[str, dict] = defaultdict(dict)
    for row in rows.annotate(n=Count("id")).order_by():
        counts[row[1] if by_topic else "all"][row[0]] = row[-1]
    return counts


def throughput_per_topic(received: dict[str, dict] | None = None, span: Range = HOUR) -> Chart:
    """The last hour's events per minute, stacked by topic (the busiest drawn apart);
    `received` the counts as `_received_per_minute(by_topic=True)` gives them, when
    read already (apps.eventing.selectors.overview_page). Over a longer `span`, its
    wider columns, in one grouped query."""
    if span != HOUR:
        return _throughput_over(span)
    minutes = _minutes()
    if received is None:
        received = _received_per_minute(minutes[0], by_topic=True)
    series = stacked_series(
        received,
        minutes,
        drawn=TOPICS_DRAWN,
        rest="other topics",
    )
    return Chart(
        key="throughput-per-topic",
        title="Throughput per topic, last hour",
        description="Events received each minute, stacked by topic.",
        labels=_labels(minutes) if series else [],
        series=series,
        kind="columns",
        empty="No event received in the last hour.",
    )


def _throughput_over(span: Range) -> Chart:
    buckets = span.buckets(timezone.now())
    rows = RecentEvent.objects.filter(received_at__gte=buckets[0])
    received: dict[str, dict] = defaultdict(dict)
    for r in _binned(rows, "received_at", span).values("bucket", "topic").annotate(n=Count("id")):
        received[r["topic"]][r["bucket"]] = r["n"]
    series = stacked_series(received, buckets, drawn=TOPICS_DRAWN, rest="other topics")
    return Chart(
        key="throughput-per-topic",
        title=f"Throughput per topic, {span.last}",
        description=f"Events received {span.per}, stacked by topic.",
        labels=[f"{b:{span.tick}}" for b in buckets] if series else [],
        full_labels=[span.full_label(b) for b in buckets] if series else [],
        series=series,
        kind="columns",
        empty=f"No event received in the {span.last}.",
    )


@dataclass(frozen=True)
class OverviewCharts:
    """The eventing page's charts over the range it was asked for (`span`), each as far
    as its figures are kept: `published`, `throughput` and `lag_history` over the
    range, `lag` now."""

    published: Chart
    throughput: Chart
    lag: Chart
    lag_history: Chart


def overview_charts(page, span: Range = HOUR) -> OverviewCharts:
    """The charts of the eventing page (`page`: apps.eventing.selectors.overview_page,
    whose one statement read the last hour's counts). A chart whose figures are not kept
    as long as `span` shows the longest span it has, and its footnote says so."""
    lag, lag_history = lag_now_and_over_time(page.topic_names, span)
    if span == HOUR:
        published = published_chart(page.overview.per_minute)
        throughput = throughput_per_topic(page.received_per_topic)
    else:
        published = events_per_minute(span)
        kept = _within(_received_kept())
        shown = span if span in kept else (kept[-1] if kept else HOUR)
        throughput = throughput_per_topic(span=shown)
        if shown != span:
            throughput = _not_kept(throughput, "Received events", _received_kept(), shown, span)
    return OverviewCharts(published, throughput, lag, lag_history)


def _not_kept(chart: Chart, what: str, kept: timedelta, shown: Range, asked: Range) -> Chart:
    hours = kept.total_seconds() / 3600
    said = f"{hours:g} hours" if hours < 48 else f"{hours / 24:g} days"
    note = f"{what} are kept {said}: this chart shows the {shown.last}, not the {asked.last}."
    return replace(chart, footnote=" ".join(filter(None, [chart.footnote, note])))


def lag_chart(lags: list[Lag], *, backlog: int | None = None) -> Chart:
    """The consumer groups furthest behind (LAG_SHOWN of them), after the outbox backlog
    when one is given; the others are counted in the footnote."""
    shown, left = lags[:LAG_SHOWN], lags[LAG_SHOWN:]
    behind = sum(1 for lag in left if lag.behind)
    footnote = f"{len(left)} more consumer groups, {behind} of them behind." if left else ""
    lags = shown
    rows = [("outbox backlog", backlog, 0)] if backlog is not None else []
    # The topic first: Steward's own consumers read every topic, and a label cut short
    # must still say which.
    rows += [(f"{lag.topic}: {lag.consumer}", lag.waiting, lag.pending) for lag in lags]
    with_backlog = backlog is not None
    return Chart(
        key="backlog-and-lag" if with_backlog else "consumer-lag",
        title="Outbox backlog and consumer lag" if with_backlog else "Lag per consumer, now",
        description=(
            "Events waiting in the outbox or in a stream for a consumer group, and those a "
            "group has read but not acknowledged."
        ),
        labels=[label for label, *_ in rows],
        series=[
            Series("waiting", [waiting for _, waiting, _ in rows]),
            Series("not acknowledged", [pending for *_, pending in rows]),
        ],
        empty="No consumer group reads a stream yet.",
        footnote=footnote,
    )


def backlog_and_lag() -> Chart:
    """The outbox backlog beside each consumer's lag: where events wait, now. The lag is
    the platform's, so only the system view shows it; a tenant sees its own backlog."""
    bound = counting.COUNTED_EXACTLY
    if current_scope().tenant_id is None:
        backlog = outbox_backlog()
        chart = lag_chart(consumer_lag(), backlog=backlog.waiting)
        if not backlog.estimated:
            return chart
        said = f"The outbox backlog is PostgreSQL's estimate: counted exactly up to {bound:,}."
    else:
        # A tenant's rows have no estimate of their own (the planner's is the table's):
        # the count stops at the bound, and the chart says so.
        waiting = OutboxEvent.objects.all()[: bound + 1].count()
        chart = lag_chart([], backlog=waiting)
        if waiting <= bound:
            return chart
        said = f"More than {bound:,} events wait: counted that far."
    return replace(chart, footnote=" ".join(filter(None, [chart.footnote, said])))


def lag_now_and_over_time(names, span: Range = HOUR) -> tuple[Chart, Chart]:
    """`lag_chart` of the topics `names` and the lag over `span`, read from Redis at once."""
    starts = _minutes() if span == HOUR else span.buckets(timezone.now())
    lags, history = lag_now_and_samples(names, starts, span.step)
    return lag_chart(lags), _lag_over_time(starts, history, span)


def _lag_over_time(starts: list, history: dict, span: Range) -> Chart:
    """The lag over `span`, stacked by consumer group (the groups furthest behind over
    it drawn apart, the rest summed): the last hour minute by minute, a longer span in
    its wider columns, each holding each group's worst minute in it."""
    behind = {group: counts for group, counts in history.items() if any(counts.values())}
    series = stacked_series(behind, starts, drawn=CONSUMERS_DRAWN, rest="other groups")
    if span == HOUR:
        said, footnote = "sampled each minute", ""
        labels, full_labels = _labels(starts), []
    else:
        within = span.per.replace("per ", "in each ", 1)
        said = f"at its worst {within} (sampled each minute)"
        footnote = (
            f"Each column shows the most each group was behind {within}: "
            "a peak is not averaged away."
        )
        labels = [f"{b:{span.tick}}" for b in starts]
        full_labels = [span.full_label(b) for b in starts]
    return Chart(
        key="lag-over-time",
        title=f"Lag per consumer, {span.last}",
        description=f"Events each consumer group was behind on its topic, {said}.",
        labels=labels if series else [],
        full_labels=full_labels if series else [],
        series=series,
        kind="columns",
        footnote=footnote if series else "",
        empty=f"No consumer group was behind in the samples of the {span.last}."
        if history
        else f"No lag sampled in the {span.last}.",
    )
