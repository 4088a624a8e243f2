"""The stores on the console dashboard (apps.console.panels): flagged bindings waiting
on an operator's decision, each with the page where it is made."""

from __future__ import annotations

from apps.console.panels import DashboardPanel
from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, caller_kind
from apps.stores.selectors import bindings_awaiting_decision

SHOWN = 20


def dashboard_panels(request) -> list[DashboardPanel]:
    if caller_kind(request) not in (OPERATOR, TENANT_ADMIN):
        return []
    waiting = list(bindings_awaiting_decision()[: SHOWN + 1])
    if not waiting:
        return []
    return [
        DashboardPanel(
            "stores/dashboard_decisions.html",
            {"stores_waiting": waiting[:SHOWN], "stores_more": len(waiting) > SHOWN},
        )
    ]
