"""The list pages' rows (apps.console.templatetags.console.list_rows) say exactly what
the template language would: every cell is the value as `{{ value }}` renders it (local
time, localized, escaped), linked cells link the row's page, row actions post with the
CSRF token and the way back (tests/eventing/test_views.py), and a page's extra cell is
its template's."""

from __future__ import annotations

import datetime
import random
import re
import uuid
import zoneinfo
from html.parser import HTMLParser

import pytest
from django.apps import apps
from django.db import models
from django.http import QueryDict
from django.template import Context, Template
from django.test import RequestFactory, override_settings
from django.urls import reverse
from django.utils import timezone
from django.utils.safestring import mark_safe
from hypothesis import given, settings
from hypothesis import strategies as st

from apps.assets import services as assets
from apps.assets.models import Asset
from apps.assets.views import AssetListView
from apps.console.cells import EMPTY, NO, YES, Cells
from apps.console.listing import in_words
from apps.console.rows import _display, value_rows
from apps.console.templatetags.console import attr, list_rows
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.audit import audit_record

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


def rendered_cell(value) -> str:
    """A list's cell: `{{ v }}`, but nothing as a dash and yes or no as ✓ or a dash
    (apps.console.cells), never Python's None, True or False."""
    if value is None or value == "":
        return EMPTY
    if isinstance(value, bool):
        return YES if value else NO
    return rendered(value)


def expected_cells(row, columns) -> list[str]:
    cells = []
    for column in columns:
        shown = rendered_cell(attr(row, column.attr))
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


def test_the_audit_trail_draws_each_rows_changes_in_its_extra_cell(client, operator, tenant_a):
    assets.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="audited")
    client.force_login(operator)
    html = client.get(reverse("console:audit-list")).content.decode()
    assert '<td class="record-cell">' in html and "<details" in html


def test_the_audit_trails_codes_wrap_between_their_words_only(client, operator, tenant_a):
    # given an entry whose action is long enough to wrap in its column at 1280 px
    action = "schema_version.withdraw_acknowledgement"
    with tenant_scope(tenant_a):
        audit_record(actor=SYSTEM_ACTOR, action=action, instance=tenant_a, tenant=tenant_a)
    client.force_login(operator)
    # when the audit trail lists it
    html = client.get(reverse("console:audit-list"), {"action": action}).content.decode()
    # then its action and type may wrap after a "." or "_" and nowhere else
    (row,) = Table(html).rows
    assert row[3] == "schema_<wbr>version.<wbr>withdraw_<wbr>acknowledgement"
    assert row[5] == "tenancy.<wbr>tenant"
    assert row[4] == "alpha"  # a name is no code: it is written as it is


@pytest.mark.parametrize("page", ["dashboard", "tenant page"])
def test_the_recent_changes_tables_wrap_codes_as_the_audit_trail_does(
    page, client, operator, tenant_a
):
    # given an entry whose action is long enough to wrap in its column
    action = "schema_version.withdraw_acknowledgement"
    with tenant_scope(tenant_a):
        audit_record(actor=SYSTEM_ACTOR, action=action, instance=tenant_a, tenant=tenant_a)
    client.force_login(operator)
    # when the dashboard or the tenant's page lists it among its recent changes
    url = reverse("console:dashboard") if page == "dashboard" else tenant_a.get_absolute_url()
    html = client.get(url).content.decode()
    # then its action cell is the audit trail's, wrapping after a "." or "_" only
    recent = html[html.index("<h2>Recent changes</h2>") :]
    assert "<td>schema_<wbr>version.<wbr>withdraw_<wbr>acknowledgement</td>" in recent
    assert action not in recent


@pytest.mark.parametrize(
    ("value", "written"),
    [
        ("tenant.update", "tenant.<wbr>update"),
        ("a__b.", "a_<wbr>_<wbr>b."),  # a break at the very end would wrap nothing
        ("<b>_x", "&lt;b&gt;_<wbr>x"),
        ("plain", "plain"),
        ("", EMPTY),
        (None, EMPTY),
        (7, "7"),
    ],
)
def test_a_code_is_escaped_and_gets_a_break_after_each_dot_and_underscore(value, written):
    assert Cells(Context({}, autoescape=True)).code(value) == written


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


@settings(max_examples=150, deadline=None)
@given(
    minute=_moments,
    seconds=st.lists(st.integers(0, 59), min_size=2, max_size=4),
    zones=st.lists(_zones, min_size=2, max_size=3),
    written_as=st.sampled_from(["N j, Y, P", "Y-m-d H:i:s", "D j M Y H:i e O", "c", "P"]),
)
def test_moments_in_one_minute_are_each_written_as_the_template_language_does(
    minute, seconds, zones, written_as
):
    """A format without seconds writes a minute once (apps.console.cells._written):
    each moment of one minute, in each zone, and with a format that shows seconds, is
    still written as `{{ value }}` writes it."""
    with override_settings(DATETIME_FORMAT=written_as):
        for zone in zones:
            with timezone.override(zone):
                for second in seconds:
                    value = minute.replace(second=second, tzinfo=datetime.UTC)
                    context = {"autoescape": True, "use_l10n": False}
                    expected = Template("{{ v }}").render(Context({"v": value}, **context))
                    assert Cells(Context({}, **context))(value) == expected, (value, zone)


@pytest.mark.parametrize("page", ["assets:asset-list", "stores:binding-list", "console:audit-list"])
def test_the_filter_form_draws_each_widget_as_django_does_chosen_or_not(
    client, operator, tenant_a, page
):
    """Only the filters a request names are bound, and empty widgets are drawn once per
    process (apps.console.listing.bound_filterset, filter_widgets): each page's widgets
    are still the ones Django draws for its request with the whole FilterSet, a chosen
    value never reaches another page, and the rows are the whole FilterSet's."""
    for name in ("kept", "<b>x</b>"):
        assets.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name=name)
    client.force_login(operator)
    listed = set()
    queries = [
        "",
        "status=approved&workflow_managed=true&tenant=<b>x</b>",
        "",
        "status=",
        "status=nonsense",
        "created_after=2020-01-01&created_before=not-a-date",
    ]
    for query in queries:
        response = client.get(f"{reverse(page)}?{query}")
        view = response.context["view"]
        whole = view.filterset_class(QueryDict(query), queryset=view.get_base_queryset())
        in_words(whole.form)
        fresh = [(bound.label, str(bound)) for bound in whole.form]
        drawn = [(widget.label, widget.html) for widget in response.context["filter_widgets"]]
        assert drawn == fresh
        html = response.content.decode()
        assert all(widget in html for _, widget in fresh)
        with system_scope():  # the operator's pages read in the system scope
            expected = {row.pk for row in whole.qs} if whole.is_valid() else set()
        assert {row.pk for row in response.context["object_list"]} <= expected
        assert response.context["paginator"].count == len(expected)
        listed |= expected
    assert listed or page == "stores:binding-list"  # the rows were there to compare


def bodies_as_values_and_as_instances(view_class, user, query: str = ""):
    """A list page's body rows written from its `.values()` rows and from its model
    instances, for the same request (the CSRF token held still), and the row count."""
    request = RequestFactory().get(f"/list/?{query}")
    request.user, request.tenant = user, None
    view = view_class()
    view.setup(request)

    def body(rows) -> str:
        context = Context(
            {
                "columns": view.columns,
                "row_actions": view.row_actions,
                "object_list": rows,
                "view": view,
                "request": request,
                "csrf_token": "held-still",
            }
        )
        return list_rows(context)

    assert view.row_fields, f"{view_class.__name__} reads model instances"
    with system_scope():
        as_values = list(view.get_queryset())
        view.row_fields = ()
        as_instances = list(view.get_queryset())
        written = body(value_rows(as_instances[0]._meta.model, as_values)) if as_values else ""
        expected = body(as_instances) if as_instances else ""
    assert len(as_values) == len(as_instances)
    return written, expected, len(as_values)


def test_rows_read_as_values_write_what_the_model_instances_write(operator, tenant_a, tenant_b):
    """The asset list reads its rows as `.values()` (apps.console.rows): over generated
    assets (every status, with and without a workflow instance, stale links, awkward
    names, two tenants) and each sort, its body is the one the same page's model
    instances give, cell for cell, link for link."""
    rng = random.Random(2112)
    awkward = ['<b>bold</b> & "quoted"', "l'apostrophe", "ünïcödé ✓", "a" * 120, "x", ""]
    for n in range(60):
        tenant = rng.choice([tenant_a, tenant_b])
        asset = assets.asset_create(
            actor=SYSTEM_ACTOR, tenant=tenant, name=f"{rng.choice(awkward)} {n}"
        )
        status = rng.choice(Asset.Status.values)
        # a draft was never delegated (asset_workflow_reference_after_request)
        instance = None if status == "draft" else rng.choice([None, uuid.uuid4()])
        with tenant_scope(tenant):
            Asset.objects.filter(pk=asset.pk).update(
                status=status,
                workflow_instance_id=instance,
                workflow_link_stale=rng.random() < 0.3,
                created_at=timezone.now() - datetime.timedelta(seconds=rng.randrange(10**7)),
            )
    for query in ["", "sort=name", "sort=-tenant__slug", "sort=status", "status=requested"]:
        written, expected, count = bodies_as_values_and_as_instances(AssetListView, operator, query)
        assert count > 0
        assert written == expected
        if not query:
            assert f"<td>{YES}</td>" in written and f"<td>{NO}</td>" in written
            assert not re.search(r"<td>(True|False|None)</td>", written)
            shown = set(re.findall(r"<td>([A-Z]\w+)</td>", written))
            assert {s.label for s in Asset.Status} <= shown


def test_a_value_row_refuses_what_it_was_not_given_without_querying(
    tenant_a, django_assert_num_queries
):
    """A field the page did not fetch is an error the parity test names, never a query
    per row; a row is read-only; the model's constants and methods are the model's."""
    assets.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name="one")
    with system_scope():
        values = Asset.objects.values("pk", "name", "status", "tenant__slug").get()
    row = value_rows(Asset, [values])[0]
    with django_assert_num_queries(0):
        for missing in ("description", "tenant_id", "created_at", "callbacks", "nonsense"):
            with pytest.raises(AttributeError):
                getattr(row, missing)
        assert row.Status is Asset.Status
        assert row.get_status_display() == "Draft"
        assert row.tenant.slug == tenant_a.slug
        assert row.get_absolute_url() == reverse("assets:asset-detail", args=[values["pk"]])
    with pytest.raises(AttributeError):
        row.name = "changed"


def test_a_value_rows_null_foreign_key_reads_as_none():
    from apps.eventing.models import DeadLetter

    bare = value_rows(DeadLetter, [{"tenant__slug": None, "tenant__name": None}])[0]
    assert bare.tenant is None
    named = value_rows(DeadLetter, [{"tenant_id": None, "tenant__slug": None}])[0]
    assert named.tenant is None
    given = value_rows(DeadLetter, [{"tenant_id": uuid.uuid4(), "tenant__slug": "a"}])[0]
    assert given.tenant.slug == "a"


def _choice_fields():
    return [
        (model, field)
        for model in apps.get_models()
        if model.__module__.startswith("apps.")
        for field in model._meta.concrete_fields
        if field.choices
    ]


@pytest.mark.parametrize(
    ("model", "field"), _choice_fields(), ids=lambda m: getattr(m, "__name__", None) or m.name
)
def test_a_value_rows_display_of_a_choice_is_the_models(model, field):
    """`get_FOO_display` on a row (its choices made a dict once) writes what the model's
    own method writes, for every choice, a value outside them and none."""
    display = f"get_{field.name}_display"
    values = [value for value, _label in field.flatchoices] + ["not-a-choice", 12345, None]
    for value in values:
        instance = model(**{field.attname: value})
        row = value_rows(model, [{"pk": 1, field.attname: value}])[0]
        assert getattr(row, display)() == getattr(instance, display)(), (field, value)


def test_a_choice_given_as_a_callable_is_left_to_django():
    """Django evaluates choices given as a callable on each call, so what they give may
    change: no dict is made of them, and a row runs the model's own method."""
    field = models.CharField(max_length=8, choices=lambda: [("a", "First")])
    assert _display(field) is None
    status = Asset._meta.get_field("status")
    assert _display(status) is not None
