"""The attention queue on the console dashboard (apps.console.panels): what waits on a
person, by kind, for operators."""

from __future__ import annotations

from apps.attention import selectors
from apps.console.panels import DashboardPanel
from apps.core.api.permissions import OPERATOR, caller_kind
from apps.core.attention import kinds
from apps.core.scope import current_scope


def dashboard_panels(request) -> list[DashboardPanel]:
    # The queue is read across tenants: an operator acting for one tenant sees it from
    # the system view (the queue's page answers in the system scope either way).
    if caller_kind(request) != OPERATOR or current_scope().tenant_id is not None:
        return []
    counts = selectors.counts()
    rows = [(kind, counts[slug]) for slug, kind in kinds().items()]
    return [
        DashboardPanel(
            "attention/dashboard_panel.html",
            {"attention_rows": rows, "attention_total": sum(counts.values())},
        )
    ]
