"""The list pages' rows (apps.console.templatetags.console.list_rows) say exactly what
the template language would: every cell is the value as `{{ value }}` renders it (local
time, localized, escaped), linked cells link the row's page, row actions post with the
CSRF token and the way back (tests/eventing/test_views.py), and a page's extra cell is
its template's."""

from __future__ import annotations

import datetime
import random
import re
import zoneinfo
from html.parser import HTMLParser

import pytest
from django.template import Context, Template
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.assets import services as assets
from apps.assets.models import Asset
from apps.assets.views import AssetListView
from apps.console.cells import Cells
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


_zones = st.sampled_from(["UTC", "Europe/Berlin", "America/St_Johns", "Asia/Kathmandu"])
_moments = st.datetimes(
    min_value=datetime.datetime(1900, 1, 1), max_value=datetime.datetime(2200, 1, 1)
)
_values = st.one_of(
    st.text(),
    st.text(alphabet="<>&'\"ab ").map(mark_safe),
    st.booleans(),
    st.none(),
    st.uuids(),
    st.integers(),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.floats(allow_nan=False),
    st.dates(),
    _moments,
    st.builds(lambda m, z: m.replace(tzinfo=zoneinfo.ZoneInfo(z)), _moments, _zones),
    st.builds(lambda m: m.replace(tzinfo=datetime.UTC), _moments),
)


@settings(max_examples=400, deadline=None)
@given(value=_values, zone=_zones, autoescape=st.booleans())
def test_a_cell_writes_any_value_as_the_template_language_does(value, zone, autoescape):
    """The one-pass writer's shortcuts (strings, booleans, UUIDs, datetimes) and its
    fallback give `{{ value }}`'s text for any value, in any current time zone."""
    with timezone.override(zone):
        expected = Template("{{ v }}").render(Context({"v": value}, autoescape=autoescape))
        written = Cells(Context({}, autoescape=autoescape))(value)
    assert written == expected


@pytest.mark.parametrize("page", ["assets:asset-list", "stores:binding-list", "console:audit-list"])
def test_the_filter_form_draws_each_widget_as_django_does_chosen_or_not(client, operator, page):
    """Empty widgets are drawn once per process (apps.console.listing.filter_widgets):
    each page's widgets are still the ones Django draws for its request, a chosen value
    never reaches another page."""
    client.force_login(operator)
    queries = ["", "status=approved&workflow_managed=true&tenant=<b>x</b>", "", "status="]
    for query in queries:
        response = client.get(f"{reverse(page)}?{query}")
        filterset = response.context["view"].filterset
        fresh = [(bound.label, str(bound)) for bound in filterset.form]
        assert response.context["filter_widgets"] == fresh
        html = response.content.decode()
        assert all(widget in html for _, widget in fresh)
