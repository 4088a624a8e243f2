"""The registry's charts (reads only; drawn by apps.console.charts): schema versions per
topic over time, and the acknowledgements breaking versions still wait for."""

from __future__ import annotations

from collections import defaultdict
from datetime import timedelta

from django.db.models import Count
from django.db.models.functions import TruncWeek
from django.utils import timezone

from apps.console.charts import Chart, Series, stacked_series
from apps.registry.models import SchemaVersion
from apps.registry.selectors import pending_versions

WEEKS = 12
TOPICS_DRAWN = 5
SHOWN = 15


def versions_per_topic(*, now=None) -> Chart:
    """Schema versions submitted each week over the last WEEKS weeks, stacked by topic
    (the busiest drawn apart, the rest summed), whatever became of them."""
    now = now or timezone.now()
    this_week = (now - timedelta(days=now.weekday())).replace(
        hour=0, minute=0, second=0, microsecond=0
    )
    weeks = [this_week - timedelta(weeks=WEEKS - 1 - i) for i in range(WEEKS)]
    rows = (
        SchemaVersion.objects.filter(created_at__gte=weeks[0])
        .annotate(week=TruncWeek("created_at"))
        .values_list("week", "topic__name")
        .annotate(n=Count("id"))
        .order_by()
    )
    by_topic: dict[str, dict] = defaultdict(dict)
    for week, topic, n in rows:
        by_topic[topic][week.date()] = n
    days = [week.date() for week in weeks]
    series = stacked_series(by_topic, days, drawn=TOPICS_DRAWN, rest="other topics")
    return Chart(
        key="versions-per-topic",
        title=f"Schema versions per topic, last {WEEKS} weeks",
        description="Schema versions submitted each week, stacked by topic.",
        labels=[f"{d:%d %b}" for d in days] if series else [],
        series=series,
        kind="columns",
        empty=f"No schema version submitted in the last {WEEKS} weeks.",
    )


def acknowledgements_outstanding() -> Chart:
    """Each breaking version waiting on its consumers, oldest first, with how many have
    acknowledged it and how many it still waits for (a fixed number of queries: the
    pending versions' selector prefetches topics' consumers and acknowledgements)."""
    versions = list(pending_versions().order_by("created_at", "id")[:SHOWN])
    acknowledged = [
        sum(1 for ack in v.acknowledgements.all() if ack.withdrawn_at is None) for v in versions
    ]
    return Chart(
        key="acknowledgements-outstanding",
        title="Acknowledgements outstanding",
        description="Breaking schema versions waiting on consumers: acknowledged, and awaited.",
        labels=[str(v) for v in versions],
        series=[
            Series("acknowledged", acknowledged),
            Series("awaited", [len(v.awaiting_consumers) for v in versions]),
        ],
        links=[v.get_absolute_url() for v in versions],
        empty="No schema version waits on a consumer.",
    )
