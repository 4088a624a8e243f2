"""Assets on the console dashboard (apps.console.panels): approvals waiting and for how
long, the acting tenant's or every tenant's (apps.assets.charts)."""

from __future__ import annotations

from django.urls import reverse

from apps.assets import charts
from apps.console.panels import DashboardPanel, chart_panel


def dashboard_panels(request) -> list[DashboardPanel]:
    chart = charts.approvals_waiting(tenant=request.tenant)
    waiting = int(sum(chart.totals))
    return [
        chart_panel(
            chart,
            note=f"{waiting} waiting" if waiting else "Nothing waits for approval.",
            more=("Every asset", reverse("assets:asset-list")),
        )
    ]
