"""The assets' chart for the dashboard (reads only, row-level security choosing the
rows): approvals waiting, by how long they have waited.

An asset keeps no time of its request, so the wait is counted from its last change
(`updated_at`): the request, or its delegation to the Workflow Service just after it.
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone

from apps.assets.models import Asset
from apps.assets.selectors import asset_list
from apps.console.charts import Chart, Series

# (label, waited at least, waited less than)
AGES = (
    ("under an hour", None, timedelta(hours=1)),
    ("1 to 24 hours", timedelta(hours=1), timedelta(days=1)),
    ("1 to 7 days", timedelta(days=1), timedelta(days=7)),
    ("over 7 days", timedelta(days=7), None),
)


def approvals_waiting(*, tenant=None, now=None) -> Chart:
    now = now or timezone.now()
    buckets = {}
    for index, (_, at_least, less_than) in enumerate(AGES):
        age = Q()
        if at_least is not None:
            age &= Q(updated_at__lte=now - at_least)
        if less_than is not None:
            age &= Q(updated_at__gt=now - less_than)
        buckets[f"age_{index}"] = Count("id", filter=age)
    counts = (
        asset_list(tenant=tenant)
        .filter(status=Asset.Status.REQUESTED)
        .order_by()
        .aggregate(**buckets)
    )
    url = f"{reverse('assets:asset-list')}?status={Asset.Status.REQUESTED}"
    return Chart(
        key="approvals-waiting",
        title="Approvals waiting, by how long",
        description="Assets whose approval is requested and not decided, by the time since.",
        labels=[label for label, *_ in AGES],
        series=[Series("assets", [counts[f"age_{i}"] for i in range(len(AGES))])],
        links=[url] * len(AGES),
    )
