"""Governance's gauges at `/metrics` (apps.core.metrics): tasks open and overdue."""

from __future__ import annotations

from django.db.models import Count, Q

from apps.core.metrics import gauge
from apps.governance.models import GovernanceTask


def open_tasks() -> dict:
    return GovernanceTask.objects.filter(status__in=GovernanceTask.OPEN).aggregate(
        open=Count("id"), overdue=Count("id", filter=Q(overdue_at__isnull=False))
    )


def collect():
    tasks = open_tasks()
    yield gauge("steward_governance_tasks_open", "Governance tasks not yet settled.", tasks["open"])
    yield gauge(
        "steward_governance_tasks_overdue",
        "Governance tasks past their due date.",
        tasks["overdue"],
    )
