"""Assets' gauges at `/metrics` (apps.core.metrics): what waits on the Workflow Service."""

from __future__ import annotations

from django.db.models import Count, Min

from apps.assets.models import Asset
from apps.core.metrics import age_seconds, gauge


def workflow_waiting() -> dict:
    return Asset.objects.workflow_managed().aggregate(n=Count("id"), oldest=Min("updated_at"))


def collect():
    waiting = workflow_waiting()
    yield gauge(
        "steward_workflow_assets_waiting",
        "Assets waiting on the Workflow Service.",
        waiting["n"],
    )
    yield gauge(
        "steward_workflow_assets_oldest_wait_seconds",
        "How long the longest-waiting asset has waited on the Workflow Service.",
        age_seconds(waiting["oldest"]),
    )
