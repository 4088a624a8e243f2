"""The stores on the console dashboard (apps.console.panels): store bindings by status
(apps.stores.charts), and the flagged bindings waiting on an operator's decision, each
with the page where it is made."""

from __future__ import annotations

from django.urls import reverse

from apps.console.panels import DashboardPanel, chart_panel
from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, caller_kind
from apps.stores import charts
from apps.stores.selectors import bindings_awaiting_decision

SHOWN = 20


def dashboard_panels(request) -> list[DashboardPanel]:
    panels = [
        chart_panel(
            charts.bindings_by_status(tenant=request.tenant),
            more=("Every store binding", reverse("stores:binding-list")),
        )
    ]
    if caller_kind(request) not in (OPERATOR, TENANT_ADMIN):
        return panels
    waiting = list(bindings_awaiting_decision()[: SHOWN + 1])
    if waiting:
        panels.insert(
            0,
            DashboardPanel(
                "stores/dashboard_decisions.html",
                {"stores_waiting": waiting[:SHOWN], "stores_more": len(waiting) > SHOWN},
            ),
        )
    return panels
