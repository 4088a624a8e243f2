"""The retention console: the rule editor's refusals, the hold pages and the overview,
and list pages whose query count stays put."""

from datetime import date, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.core.context import Actor
from apps.core.scope import tenant_scope
from apps.governance.models import LegalHold, RetentionRule, RetentionSweep
from apps.governance.retention import services
from tests.query_counts import assert_flat_query_count

pytestmark = pytest.mark.django_db


def test_the_console_rule_editor_shows_a_locked_rules_refusal(client, operator, personal):
    client.force_login(operator)
    rule = services.rule_create(
        actor=Actor(user=operator),
        name="kept",
        data_class=personal,
        period_days=30,
        action="archive",
        locked=True,
    )
    url = reverse("retention:rule-edit", args=[rule.pk])
    body = {
        "name": "kept",
        "data_class": "personal",
        "period_days": 10,
        "action": "archive",
        "enabled": "on",
        "locked": "on",
    }
    page = client.post(url, body)
    assert page.status_code == 200 and b"can be lengthened, never shortened" in page.content
    assert RetentionRule.objects.get().period_days == 30
    page = client.post(reverse("retention:rule-delete", args=[rule.pk]), follow=True)
    assert b"cannot be deleted" in page.content and RetentionRule.objects.exists()
    assert client.post(url, {**body, "period_days": 60}).status_code == 302
    assert RetentionRule.objects.get().period_days == 60


def test_the_console_hold_pages_and_overview(client, operator, tenant_a, admin_a, store):
    client.force_login(admin_a)
    page = client.post(
        reverse("retention:hold-new"),
        {"tenant": "alpha", "store": "knowledge-sql", "reason": "audit"},
    )
    assert page.status_code == 302, page.content
    with tenant_scope(tenant_a):
        hold = LegalHold.objects.get()
    assert client.get(reverse("retention:hold-list")).status_code == 200
    released = client.post(hold.get_absolute_url(), {"reason": "done"})
    assert released.status_code == 302
    with tenant_scope(tenant_a):
        assert not LegalHold.objects.get().active
    assert client.get(reverse("retention:overview")).status_code == 403  # operators' page
    client.force_login(operator)
    services.sweep_run()
    overview = client.get(reverse("retention:overview"))
    assert overview.status_code == 200 and b"Upcoming" in overview.content
    assert b"eventing.InboxEntry" in overview.content
    assert client.get(reverse("retention:preview")).status_code == 200


@pytest.mark.parametrize("url_name", ["retention:rule-list", "retention:hold-list"])
def test_retention_list_pages_query_count_does_not_grow(
    client, operator, tenant_a, personal, url_name
):
    client.force_login(operator)
    op = Actor(user=operator)

    def add(n, start):
        for i in range(start, start + n):
            services.rule_create(
                actor=op, name=f"r{i}", data_class=personal, period_days=i + 1, action="delete"
            )
            services.hold_place(actor=op, tenant=tenant_a, reason=f"hold {i}")

    def count():
        with CaptureQueriesContext(connection) as ctx:
            assert client.get(reverse(url_name)).status_code == 200
        return len(ctx.captured_queries)

    add(2, 0)
    count()  # the caller's first page fills the auth cache
    few = count()
    add(6, 2)
    assert count() == few


def test_the_overviews_query_count_does_not_grow_with_the_sweeps(client, operator):
    client.force_login(operator)
    nights = iter(range(1, 30))

    def add_sweeps(n):
        for _ in range(n):
            RetentionSweep.objects.create(
                night=date(2026, 1, 1) + timedelta(days=next(nights)),
                as_of=timezone.now(),
                status="succeeded",
            )

    assert_flat_query_count(add_sweeps, lambda: client.get(reverse("retention:overview")))
