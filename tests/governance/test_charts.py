"""The retention pages' charts (apps.governance.charts): last night's sweep and tonight's
preview, rows by table and rule, equal to what the sweep recorded and the preview plans."""

from __future__ import annotations

from datetime import date

import pytest
from django.urls import reverse
from django.utils import timezone

from apps.governance.models import RetentionSweep
from apps.governance.retention import selectors
from tests.console.chart_figures import chart_figures, column
from tests.governance.factories import inbox

pytestmark = pytest.mark.django_db


def test_last_nights_sweep_is_drawn_by_table_and_rule(client, operator):
    tables = {
        "inbox entries": {"rule": "steward-inbox", "rows": 120, "batches": 2},
        "recent events": {"rule": "steward-event-receipts", "rows": 30, "batches": 1},
        "dead letters": {"rule": "steward-dead-letters", "rows": 0, "batches": 0},
    }
    RetentionSweep.objects.create(
        night=date(2026, 1, 1), as_of=timezone.now(), status="succeeded", results={"tables": {}}
    )
    RetentionSweep.objects.create(
        night=date(2026, 1, 2), as_of=timezone.now(), status="succeeded", results={"tables": tables}
    )
    client.force_login(operator)
    html = client.get(reverse("retention:overview")).content.decode()
    rows = column(chart_figures(html, "last-sweep"), "Rows")
    assert rows == {f"{label} · {t['rule']}": t["rows"] for label, t in tables.items()}


def test_tonights_preview_is_drawn_by_table_and_rule(client, operator, own_rules, tenant_a):
    inbox(tenant_a, 24 * 5, n=4)  # past the 72 h of steward-event-receipts
    client.force_login(operator)
    html = client.get(reverse("retention:preview")).content.decode()
    rows = column(chart_figures(html, "tonight-sweep"), "Rows")
    planned = {
        f"{t['table']} · {t['rule']}": t["rows"]
        for t in selectors.sweep_preview()["own_tables"]
        if t["action"]
    }
    assert rows == planned
    assert rows["eventing.InboxEntry · steward-event-receipts"] == 4
