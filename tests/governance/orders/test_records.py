"""The order page's evidence and receipts as labelled entries with links, the raw JSON
one click away; cancelling asks for its confirmation; the page's query count."""

import re

import pytest

from apps.core.context import Actor
from apps.core.scope import tenant_scope
from apps.governance.models import GovernanceOrder
from apps.governance.orders import evidence, services
from tests.factories import member
from tests.governance.factories import approved, complete, fresh, open_tasks, owner
from tests.governance.orders.test_views import signed_in
from tests.query_counts import assert_flat_query_count

pytestmark = pytest.mark.django_db


def test_evidence_and_receipts_are_labelled_entries_with_links_and_no_dict_text(
    bound, tenant_a, settings
):
    # given a running deletion with one task done, its receipt recorded
    settings.STEWARD_DELETION_GRACE_HOURS = 0
    order = approved(tenant_a)
    search = open_tasks(order, 1)[0]
    complete(search)
    reader = signed_in(member(tenant_a, role="admin", username="reader"))
    # when its page is read
    page = reader.get(order.get_absolute_url()).content.decode()
    # then no value is printed as Python text
    assert "{'" not in page and "{&#x27;" not in page
    # the task issued names the task: a link to its row on this page, which has that id
    assert f'<dt>Task</dt><dd><a href="#task-{search.pk}">{search.pk}</a></dd>' in page
    assert f'<tr id="task-{search.pk}">' in page
    # the binding the task is about links to the binding's page, from its row and from
    # any record that names it
    binding = search.detail["binding"]
    assert f'<td><a href="/stores/bindings/{binding}/" title="The binding">search-index</a>' in page
    links = reader.get(order.get_absolute_url()).context["record_links"]
    assert links[binding] == f"/stores/bindings/{binding}/"
    # the kind reads as words, with its code beside; the time is formatted
    assert "Task completed<br><small><code>task_completed</code></small>" in page
    assert re.search(r'<td><time datetime="\d{4}-\d\d-\d\dT[^"]+">\w+\.? \d+, \d{4}, ', page)
    # the receipt is a table of its items with labels
    assert (
        '<dt>Items</dt><dd><div class="record-scroll" tabindex="0"><table class="record">' in page
    )
    assert '<th scope="col">What</th>' in page and '<th scope="col">Count</th>' in page
    # the raw JSON of each entry is in a closed <details>
    raw = re.findall(
        r'<details class="raw-json"><summary>JSON</summary><pre><code>(.*?)</code>', page, re.S
    )
    with tenant_scope(tenant_a):
        entries = order.evidence.count()
    assert len(raw) == entries + 1  # every entry, and the one receipt
    assert any(f"&quot;task&quot;: &quot;{search.pk}&quot;" in r for r in raw)


def test_cancelling_without_its_confirmation_changes_nothing_and_with_it_cancels(tenant_a):
    requester = member(tenant_a, role="admin", username="requester")
    order = services.order_request(
        actor=Actor(user=requester), tenant=tenant_a, kind="export", reason="asked"
    )
    client = signed_in(requester)
    page = client.get(order.get_absolute_url()).content.decode()
    # the real button is inside a disclosure, beside what it will do
    assert (
        '<details class="confirm"><summary role="button" class="secondary outline">'
        "Cancel the order</summary>" in page
    )
    assert f"This will cancel this tenant export of {tenant_a.slug} for good" in page
    client.post(f"{order.get_absolute_url()}cancel/", {"comment": "typo"})
    assert fresh(order).status == GovernanceOrder.Status.REQUESTED
    client.post(f"{order.get_absolute_url()}cancel/", {"comment": "typo", "confirm": "yes"})
    assert fresh(order).status == GovernanceOrder.Status.CANCELLED


def test_the_order_page_costs_the_same_queries_for_more_evidence_and_receipts(
    bound, tenant_a, operator, settings
):
    settings.STEWARD_DELETION_GRACE_HOURS = 0
    order = approved(tenant_a)
    tasks = open_tasks(order, 1)
    ops = signed_in(operator)
    services.owner_task_complete(
        actor=owner(tasks[0].owner), task_id=tasks[0].pk, receipt={"items": [{"what": "x"}]}
    )

    def add_rows(n):
        with tenant_scope(tenant_a):
            locked = GovernanceOrder.objects.get(pk=order.pk)
            for i in range(n):
                evidence.append(
                    locked, "note", task=str(tasks[0].pk), n=i, at="2026-01-01T00:00:00Z"
                )

    assert_flat_query_count(add_rows, lambda: ops.get(order.get_absolute_url()))
