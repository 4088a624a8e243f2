"""Compute's gauges at `/metrics` (apps.core.metrics): the batch links steps wait on."""

from __future__ import annotations

from django.db.models import Count, Min

from apps.compute.models import WorkflowBatchLink
from apps.core.metrics import age_seconds, gauge


def outstanding_links() -> dict:
    return WorkflowBatchLink.objects.aggregate(n=Count("batch_id"), oldest=Min("created_at"))


def collect():
    links = outstanding_links()
    yield gauge(
        "steward_batch_links_outstanding",
        "Compute batches a workflow step still waits on.",
        links["n"],
    )
    yield gauge(
        "steward_batch_links_oldest_age_seconds",
        "Age of the oldest outstanding batch link.",
        age_seconds(links["oldest"]),
    )
