"""Readable records: the `record` tags (apps.console.templatetags.console) and the pages
of the console that show records with them: the audit trail's changes as before → after
lines, an uncertain effect's result as labelled entries, the raw JSON one click away."""

import re

import pytest
from django.template import Context, Template
from django.urls import reverse

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import tenant_scope
from apps.eventing.effects import perform_effect
from apps.tenancy.audit import audit_record

pytestmark = pytest.mark.django_db


def render(source: str, **context) -> str:
    return Template("{% load console %}" + source).render(Context(context))


def raw_json_of(html: str) -> str:
    match = re.search(
        r'<details class="raw-json"><summary>JSON</summary><pre><code>(.*?)</code>', html, re.S
    )
    assert match, html
    return match.group(1)


def test_an_object_renders_as_a_definition_list_with_humanised_labels():
    html = render("{% record value %}", value={"rows_deleted": 3, "by": "ops-a", "final": True})
    assert html == (
        '<dl class="record"><dt>Rows deleted</dt><dd>3</dd>'
        "<dt>By</dt><dd><span>ops-a</span></dd><dt>Final</dt><dd>yes</dd></dl>"
    )


def test_a_list_of_objects_renders_as_a_table_with_a_column_for_every_key():
    html = render(
        "{% record value %}",
        value=[{"what": "orders", "count": 3}, {"what": "carts", "action": "deleted"}],
    )
    assert '<th scope="col">What</th><th scope="col">Count</th><th scope="col">Action</th>' in html
    assert "<tr><td><span>orders</span></td><td>3</td><td>" in html
    assert html.count("<tr>") == 3  # the head and two rows


def test_a_timestamp_is_formatted_and_keeps_its_machine_value():
    html = render("{% record value %}", value="2026-03-04T05:06:07+00:00")
    assert html == '<time datetime="2026-03-04T05:06:07+00:00">March 4, 2026, 5:06 a.m.</time>'


def test_a_value_the_page_can_resolve_is_linked():
    html = render(
        "{% record value links=links %}",
        value={"task": "t-1", "other": "t-2"},
        links={"t-1": "#task-t-1"},
    )
    assert '<dt>Task</dt><dd><a href="#task-t-1">t-1</a></dd>' in html
    assert "<dt>Other</dt><dd><span>t-2</span></dd>" in html


def test_empty_values_read_as_a_dash_and_nothing_is_python_text():
    html = render("{% record value %}", value={"holds": [], "note": None, "detail": {}})
    assert "{'" not in html and "[]" not in html and "None" not in html
    assert '<dt>Holds</dt><dd><span class="muted">none</span></dd>' in html
    assert '<dt>Note</dt><dd><span class="muted">—</span></dd>' in html


def test_markup_in_a_value_or_a_key_is_escaped():
    html = render("{% record value raw=True %}", value={"<b>k</b>": "<script>x</script>"})
    assert "<script>" not in html and "<b>" not in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html


def test_raw_adds_the_pretty_printed_json_in_a_closed_details():
    html = render("{% record value raw=True %}", value={"b": 1, "a": [1, 2]})
    assert "<details open" not in html
    assert raw_json_of(html) == "{\n  &quot;a&quot;: [\n    1,\n    2\n  ],\n  &quot;b&quot;: 1\n}"


def test_audit_changes_render_as_one_line_per_field_before_and_after():
    html = render(
        "{% record_changes value %}",
        value={"status": ["active", "suspended"], "home_region": [None, "westeurope"]},
    )
    becomes = (
        ' <span class="muted" aria-hidden="true">→</span>'
        '<span class="visually-hidden">becomes</span> '
    )
    assert (
        f'<li><span class="change-field">status</span>: <span>active</span>{becomes}'
        "<span>suspended</span></li>"
    ) in html
    assert (
        f'<li><span class="change-field">home region</span>: <span class="muted">—</span>'
        f"{becomes}<span>westeurope</span></li>"
    ) in html


def test_the_audit_page_shows_each_entrys_changes_as_lines_with_the_json_beside(
    client, operator, tenant_a
):
    # given a change audited with a before and an after
    with tenant_scope(tenant_a):
        audit_record(
            actor=SYSTEM_ACTOR,
            action="tenant.update",
            instance=tenant_a,
            tenant=tenant_a,
            changes={"display_name": ["Alpha", "Alpha Ltd"]},
        )
    client.force_login(operator)
    # when the audit trail is read
    page = client.get(reverse("console:audit-list"), {"action": "tenant.update"})
    text = page.content.decode()
    # then the change is a before → after line, and the raw JSON is in a <details>
    assert '<th scope="col">Changes</th>' in text
    assert (
        '<li><span class="change-field">display name</span>: <span>Alpha</span> '
        '<span class="muted" aria-hidden="true">→</span>'
        '<span class="visually-hidden">becomes</span> <span>Alpha Ltd</span></li>'
    ) in text
    assert "&quot;display_name&quot;: [" in raw_json_of(text)
    assert "{&#x27;" not in text and "{'" not in text


def test_an_uncertain_effects_result_is_labelled_entries(client, operator, tenant_a):
    perform_effect(
        tenant_id=tenant_a.pk,
        actor="billing",
        target_system="workflow",
        operation="start",
        external_ref="ref-1",
        call=lambda: {"instance_id": "wf-42", "started_at": "2026-03-04T05:06:07+00:00"},
    )
    client.force_login(operator)
    text = client.get(reverse("eventing:effect-list")).content.decode()
    assert '<th scope="col">Result</th>' in text
    assert "<dt>Instance id</dt><dd><span>wf-42</span></dd>" in text
    assert '<dt>Started at</dt><dd><time datetime="2026-03-04T05:06:07+00:00">' in text
    assert "&quot;instance_id&quot;: &quot;wf-42&quot;" in raw_json_of(text)
    assert "{&#x27;" not in text
