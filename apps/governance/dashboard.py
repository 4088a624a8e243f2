"""Governance on the console dashboard (apps.console.panels): the orders a governor
(an operator or a tenant admin) should look at now, and the orders in flight with their
progress (apps.governance.charts)."""

from __future__ import annotations

from django.urls import reverse

from apps.console.panels import DashboardPanel, chart_panel
from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, caller_kind
from apps.governance import charts
from apps.governance.orders.selectors import orders_needing_attention


def dashboard_panels(request) -> list[DashboardPanel]:
    if caller_kind(request) not in (OPERATOR, TENANT_ADMIN):
        return []
    panels = [
        chart_panel(
            charts.orders_in_flight(), more=("Every order", reverse("governance:order-list"))
        )
    ]
    orders = orders_needing_attention(request.user)
    if orders:
        panels.insert(
            0,
            DashboardPanel("governance/dashboard_attention.html", {"governance_attention": orders}),
        )
    return panels
