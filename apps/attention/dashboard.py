"""The attention queue on the console dashboard (apps.console.panels): what waits on a
person, by kind, for operators, drawn as a chart (apps.attention.charts)."""

from __future__ import annotations

from django.urls import reverse

from apps.attention import charts
from apps.console.panels import DashboardPanel, chart_panel
from apps.core.api.permissions import OPERATOR, caller_kind
from apps.core.scope import current_scope


def dashboard_panels(request) -> list[DashboardPanel]:
    # The queue is read across tenants: an operator acting for one tenant sees it from
    # the system view (the queue's page answers in the system scope either way).
    if caller_kind(request) != OPERATOR or current_scope().tenant_id is not None:
        return []
    chart = charts.waiting_by_kind()
    total = sum(chart.totals)
    note = f"Waiting on a person: {total}" if total else "Nothing waits on anyone."
    return [chart_panel(chart, note=note, more=("The attention queue", reverse("attention:queue")))]
