"""The list pages' rows (apps.console.templatetags.console.list_rows) say exactly what
the template language would: every cell is the value as `{{ value }}` renders it (local
time, localized, escaped), linked cells link the row's page, row actions post with the
CSRF token and the way back (tests/eventing/test_views.py), and a page's extra cell is
its template's."""

from __future__ import annotations

import random
import re
from html.parser import HTMLParser

import pytest
from django.template import Context, Template
from django.urls import reverse
from django.utils import timezone

from apps.assets import services as assets
from apps.assets.models import Asset
from apps.assets.views import AssetListView
from apps.console.templatetags.console import attr
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope

pytestmark = pytest.mark.django_db


class Table(HTMLParser):
    """The body rows of the page's list table: each cell's inner HTML, as written."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=False)
        body = html[html.index("<tbody>") + 7 : html.index("</tbody>")]
        self.rows = [
            re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in body.split("<tr>")[1:]
        ]


def rendered(value) -> str:
    return Template("{{ v }}").render(Context({"v": value}))


def expected_cells(row, columns) -> list[str]:
    cells = []
    for column in columns:
        shown = rendered(attr(row, column.attr))
        if column.link:
            shown = f'<a href="{rendered(row.get_absolute_url())}">{shown}</a>'
        cells.append(shown)
    return cells


def test_each_cell_is_the_value_as_the_template_language_renders_it(client, operator, tenant_a):
    rng = random.Random(21)
    awkward = ['<b>bold</b> & "quoted"', "l'apostrophe", "ünïcödé ✓", "a" * 120, "x"]
    for n in range(12):
        asset = assets.asset_create(
            actor=SYSTEM_ACTOR, tenant=tenant_a, name=f"{rng.choice(awkward)} {n}"
        )
        if n % 3 == 0:
            with tenant_scope(tenant_a):
                Asset.objects.filter(pk=asset.pk).update(
                    status="approved", decided_at=timezone.now()
                )
    client.force_login(operator)
    html = client.get(reverse("assets:asset-list")).content.decode()
    with system_scope():
        rows = list(Asset.objects.select_related("tenant").order_by("-created_at", "-pk"))
        expected = [expected_cells(row, AssetListView.columns) for row in rows]
    assert Table(html).rows == expected


def test_a_page_with_nothing_says_so_across_its_columns(client, operator):
    client.force_login(operator)
    html = client.get(reverse("assets:asset-list")).content.decode()
    span = len(AssetListView.columns) + 1
    assert f'<tr><td colspan="{span}">Nothing matches.</td></tr>' in html


def test_the_audit_trail_draws_each_rows_changes_in_its_extra_cell(client, operator, tenant_a):
    assets.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="audited")
    client.force_login(operator)
    html = client.get(reverse("console:audit-list")).content.decode()
    assert '<td class="record-cell">' in html and "<details" in html
