"""The governance console: the order page's progress, tasks and actions, by role, and
the order list's query count."""

import pytest
from django.test import Client

from apps.core.context import Actor
from apps.governance.orders import services
from tests.factories import member
from tests.governance.factories import approved, complete, open_tasks, owner, running_exports
from tests.query_counts import assert_flat_query_count

pytestmark = pytest.mark.django_db


def signed_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_order_page_shows_phases_tasks_and_evidence_and_its_actions_work(
    bound, tenant_a, settings
):
    settings.STEWARD_DELETION_GRACE_HOURS = 0
    requester = member(tenant_a, role="admin", username="requester")
    approver = signed_in(member(tenant_a, role="admin", username="approver"))
    answer = signed_in(requester).post(
        "/governance/orders/new/",
        {"tenant": tenant_a.slug, "kind": "deletion", "reason": "contract ended"},
    )
    assert answer.status_code == 302
    page_url = answer["Location"]
    page = approver.get("/").content.decode()
    assert "waiting for your approval" in page  # the dashboard says so
    approver.post(f"{page_url}approve/", {"comment": "checked the contract"})
    page = approver.get(page_url).content.decode()
    assert "Running" in page and "Derived stores</strong> — current" in page
    assert "search-index" in page and "chain <strong>verified</strong>" in page
    # a receipt moves the bar
    order_id = page_url.rstrip("/").rsplit("/", 1)[-1]
    search, steward = open_tasks(order_id, 1)
    complete(search)
    complete(steward)
    page = approver.get(page_url).content.decode()
    assert "Derived stores</strong> — done" in page
    assert "Artifacts and authoritative stores</strong> — current" in page
    assert 'value="25"' in page  # one of four phases


def test_only_governors_see_orders_and_operators_retry_failed_tasks(
    bound, tenant_a, operator, settings
):
    settings.STEWARD_DELETION_GRACE_HOURS = 0
    order = approved(tenant_a)
    plain = signed_in(member(tenant_a, role="member", username="plain"))
    assert plain.get("/governance/").status_code == 403
    assert plain.get(f"/governance/orders/{order.pk}/").status_code == 403
    search = open_tasks(order, 1)[0]
    services.owner_task_fail(actor=owner("search"), task_id=search.pk, reason="disk full")
    ops = signed_in(operator)
    page = ops.get(f"/governance/orders/{order.pk}/").content.decode()
    assert "disk full" in page and "Retry" in page
    ops.post(f"/governance/tasks/{search.pk}/retry/")
    retried = open_tasks(order, 1)[0]
    assert (retried.status, retried.attempt) == ("issued", 2)


def test_a_moving_orders_page_polls_its_progress_and_reloads_when_its_status_changes(
    bound, tenant_a, settings
):
    settings.STEWARD_DELETION_GRACE_HOURS = 0
    # Requested before the deletion began: an offboarding tenant takes no new order.
    waiting = services.order_request(
        actor=Actor(user=member(tenant_a, role="admin", username="waiter")),
        tenant=tenant_a,
        kind="export",
        reason="asked",
    )
    order = approved(tenant_a)
    reader = signed_in(member(tenant_a, role="admin", username="reader"))
    progress = f"/governance/orders/{order.pk}/body/"
    page = reader.get(order.get_absolute_url()).content.decode()
    assert f'hx-get="{progress}?status=running"' in page and 'hx-trigger="every 2s"' in page
    # the fragment follows the receipts
    for task in open_tasks(order, 1):
        complete(task)
    fragment = reader.get(progress, {"status": "running"})
    assert fragment.status_code == 200 and 'value="25"' in fragment.content.decode()
    assert "Derived stores</strong> — done" in fragment.content.decode()
    # and so do the tasks and the evidence beside it
    assert fragment.content.decode().count('<mark class="status-completed">') == 2
    assert "task_completed" in fragment.content.decode()
    # a status the page does not show: the whole page reloads, the bar alone would not do
    stale = reader.get(progress, {"status": "approved"})
    assert (stale.status_code, stale["HX-Refresh"]) == (204, "true")
    # only governors may ask; an order waiting for people, not work, is not polled
    plain = signed_in(member(tenant_a, role="member", username="plain"))
    assert plain.get(progress, {"status": "running"}).status_code == 403
    assert "hx-get" not in reader.get(waiting.get_absolute_url()).content.decode()


def test_an_export_task_shows_the_bundles_of_its_receipt(bound, tenant_a):
    order = approved(tenant_a, kind="export")
    tasks = {t.owner: t for t in open_tasks(order)}
    bundle = {"name": "orders-sql", "format": "jsonl", "rows": 2}
    services.owner_task_complete(
        actor=owner("orders"), task_id=tasks["orders"].pk, receipt={"bundles": [bundle]}
    )
    reader = signed_in(member(tenant_a, role="admin", username="reader"))
    page = reader.get(order.get_absolute_url()).content.decode()
    # a table of the bundles, labelled (in the stored JSON's key order), not the dict's pairs
    assert (
        '<dt>Bundles</dt><dd><div class="record-scroll" tabindex="0"><table class="record">' in page
    )
    for label in ("Name", "Format", "Rows"):
        assert f'<th scope="col">{label}</th>' in page
    for cell in ("<td><span>orders-sql</span></td>", "<td><span>jsonl</span></td>", "<td>2</td>"):
        assert cell in page
    assert "{&#x27;" not in page and "{'" not in page


def test_the_order_list_query_count_does_not_grow(tenant_a, operator):
    requester = member(tenant_a, role="admin", username="requester")
    approver = member(tenant_a, role="admin", username="approver")
    ops = signed_in(operator)
    assert_flat_query_count(
        lambda n: running_exports(tenant_a, requester, approver, n),
        lambda: ops.get("/governance/"),
    )
