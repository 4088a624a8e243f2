"""Eventing on the console dashboard (apps.console.panels): events per minute over the
last hour, and where events wait (the outbox, each consumer's lag). Across tenants for
the system view, the tenant's own otherwise (apps.eventing.charts)."""

from __future__ import annotations

from django.urls import reverse

from apps.console.panels import DashboardPanel, chart_panel
from apps.eventing import charts


def dashboard_panels(request) -> list[DashboardPanel]:
    more = ("The eventing page", reverse("eventing:overview")) if request.user.is_operator else None
    return [
        chart_panel(charts.events_per_minute(), more=more),
        chart_panel(charts.backlog_and_lag(), more=more),
    ]
