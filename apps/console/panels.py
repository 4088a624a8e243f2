"""Figures the domain apps put on the console dashboard.

The console shell sits beneath the domains and imports none of them: each app that has
something to show contributes `dashboard_panels(request) -> list[DashboardPanel]` in
its `dashboard.py` (apps.core.hooks), and the dashboard renders the panels in
INSTALLED_APPS order, between the tenant figures and the schedules.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.template.loader import render_to_string
from django.utils.safestring import SafeString

from apps.core.hooks import app_modules


@dataclass(frozen=True)
class DashboardPanel:
    """One panel: its template, rendered with `context` alone (not the request's context
    processors, which the page around it has run already)."""

    template_name: str
    context: dict = field(default_factory=dict)

    def render(self) -> SafeString:
        return render_to_string(self.template_name, self.context)


def dashboard_panels(request) -> list[SafeString]:
    """Every app's panels for this request, rendered."""
    return [
        panel.render()
        for module in app_modules("dashboard")
        for panel in module.dashboard_panels(request)
    ]


def chart_panel(
    chart, *, note: str = "", more: tuple[str, str] | None = None, ranges: list | None = None
) -> DashboardPanel:
    """A panel holding one chart (apps.console.charts) under its title; `more` is a
    (text, url) link to the page behind the figures; `ranges` the switch between the
    time spans it can show (apps.console.charts.range_links)."""
    return DashboardPanel(
        "console/_chart_panel.html",
        {"chart": chart, "note": note, "more": more, "ranges": ranges or []},
    )
