"""Governance on the console dashboard (apps.console.panels): the orders a governor
(an operator or a tenant admin) should look at now."""

from __future__ import annotations

from apps.console.panels import DashboardPanel
from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, caller_kind
from apps.governance.orders.selectors import orders_needing_attention


def dashboard_panels(request) -> list[DashboardPanel]:
    if caller_kind(request) not in (OPERATOR, TENANT_ADMIN):
        return []
    orders = orders_needing_attention(request.user)
    if not orders:
        return []
    return [DashboardPanel("governance/dashboard_attention.html", {"governance_attention": orders})]
