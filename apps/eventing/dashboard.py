"""Eventing on the console dashboard (apps.console.panels): events over the last hour,
24 hours or 7 days (`?range=`, where the data reaches that far), and where events wait
(the outbox, each consumer's lag). Across tenants for the system view, the tenant's own
otherwise (apps.eventing.charts)."""

from __future__ import annotations

from django.urls import reverse

from apps.console.charts import chosen_range, range_links
from apps.console.panels import DashboardPanel, chart_panel
from apps.eventing import charts


def dashboard_panels(request) -> list[DashboardPanel]:
    more = ("The eventing page", reverse("eventing:overview")) if request.user.is_operator else None
    offered = charts.event_ranges()
    span = chosen_range(request, offered)
    return [
        chart_panel(
            charts.events_per_minute(span),
            more=more,
            ranges=range_links(request, offered, span),
        ),
        chart_panel(charts.backlog_and_lag(), more=more),
    ]
