"""The dashboard's charts (apps/*/charts.py, drawn by apps.console.charts): each chart's
figures, in its table and on its bars, equal the counts queried here on their own; the
tenant's people see their tenant's; the page's statements do not grow with the rows."""

from __future__ import annotations

import itertools
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.assets.models import Asset
from apps.console.charts import DAY, WEEK
from apps.core import counting
from apps.core.outbox import emit
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import DeadLetter, DeliveryCount, OutboxEvent, RecentEvent
from apps.eventing.transports import stream_key
from apps.governance.models import GovernanceOrder
from apps.stores.models import StoreBinding
from tests.console.chart_figures import chart_figures, column
from tests.console.chart_seed import (
    add_assets,
    add_dead_letters,
    add_outbox,
    add_recent_events,
    seed_every_chart,
)
from tests.eventing import conftest as eventing
from tests.factories import member
from tests.governance.factories import live_binding, make_store, running_exports
from tests.query_counts import assert_flat_query_count

pytestmark = pytest.mark.django_db

# A topic of its own per test, its stream deleted after it (the eventing tests' fixture).
topic = eventing.topic


@pytest.fixture
def platform(tenant_a, tenant_b, topic, store, profile, operator):
    seed_every_chart(
        tenant_a=tenant_a,
        tenant_b=tenant_b,
        topic=topic,
        store=store,
        profile=profile,
        operator=operator,
    )


def test_an_operators_dashboard_draws_every_tenants_figures(client, operator, platform, topic):
    client.force_login(operator)
    html = client.get("/").content.decode()

    now = timezone.now().replace(second=0, microsecond=0)
    with system_scope():
        per_minute = {
            f"{row.minute:%H:%M}": (row.delivered, row.failed)
            for row in DeliveryCount.objects.filter(
                subscription=None, minute__gt=now - timedelta(hours=1)
            )
        }
        backlog = OutboxEvent.objects.count()
        dead = DeadLetter.objects.filter(state="dead").count()
        bindings = {
            label: StoreBinding.objects.filter(status=status).count()
            for status, label in StoreBinding.Status.choices
        }
        flagged = {
            label: StoreBinding.objects.filter(status=status).exclude(violation="").count()
            for status, label in StoreBinding.Status.choices
        }
        requested = Asset.objects.filter(status="requested")
        in_flight = GovernanceOrder.objects.filter(status__in=["approved", "running", "overdue"])
        in_flight_count = in_flight.count()

    events = chart_figures(html, "events-per-minute")
    assert len(events) == 60
    drawn = {label: (v["Published"], v["Failed"]) for label, v in events.items() if v["Total"]}
    assert drawn == per_minute

    lag = chart_figures(html, "backlog-and-lag")
    assert lag["outbox backlog"]["Waiting"] == backlog == 6
    key = stream_key(topic.name)
    [group] = get_redis().xinfo_groups(key)
    unread = len(get_redis().xrange(key, min=f"({group['last-delivered-id'].decode()}", max="+"))
    mine = lag[f"{topic.name}: reader"]
    assert (mine["Waiting"], mine["Not acknowledged"]) == (unread, group["pending"]) == (3, 2)

    waiting = column(chart_figures(html, "attention-by-kind"), "Waiting")
    assert waiting["Dead letters"] == dead == 3

    ages = column(chart_figures(html, "approvals-waiting"), "Assets")
    with system_scope():
        expected = {
            "under an hour": requested.filter(updated_at__gt=now - timedelta(hours=1)).count(),
            "1 to 24 hours": requested.filter(
                updated_at__lte=timezone.now() - timedelta(hours=1),
                updated_at__gt=timezone.now() - timedelta(days=1),
            ).count(),
            "1 to 7 days": requested.filter(
                updated_at__lte=timezone.now() - timedelta(days=1),
                updated_at__gt=timezone.now() - timedelta(days=7),
            ).count(),
            "over 7 days": requested.filter(
                updated_at__lte=timezone.now() - timedelta(days=7)
            ).count(),
        }
    assert ages == expected
    assert list(ages.values()) == [2, 1, 1, 1]

    status = chart_figures(html, "bindings-by-status")
    assert column(status, "Total") == bindings
    assert column(status, "Residency violation") == flagged
    assert bindings["Provisioned"] == flagged["Provisioned"] == 1

    orders = column(chart_figures(html, "orders-in-flight"), "Done")
    assert len(orders) == in_flight_count == 2
    # An export order's one phase: the first order's only task is completed, the
    # second's is open.
    assert sorted(orders.values()) == [0, 100]


def test_a_tenants_people_see_their_own_tenants_figures_only(client, admin_a, platform, tenant_a):
    client.force_login(admin_a)
    html = client.get("/").content.decode()
    with tenant_scope(tenant_a):
        received = RecentEvent.objects.count()
        backlog = OutboxEvent.objects.filter(tenant=tenant_a).count()
    events = column(chart_figures(html, "events-per-minute"), "Received")
    assert sum(events.values()) == received == 3
    lag = chart_figures(html, "backlog-and-lag")
    # The consumers' lag is the platform's: a tenant sees its own backlog alone.
    assert list(lag) == ["outbox backlog"] and lag["outbox backlog"]["Waiting"] == backlog == 2
    assert sum(column(chart_figures(html, "approvals-waiting"), "Assets").values()) == 4
    assert sum(column(chart_figures(html, "bindings-by-status"), "Total").values()) == 1
    assert len(chart_figures(html, "orders-in-flight")) == 2
    assert 'data-chart="attention-by-kind"' not in html  # the queue is the operators'


def test_the_dashboards_statements_do_not_grow_with_the_rows(
    client, operator, tenant_a, topic, personal, profile
):
    requester = member(tenant_a, username="req")

    def add_rows(n):
        add_recent_events(tenant_a, topic, n)
        add_outbox(tenant_a, topic, n)
        add_dead_letters(tenant_a, n)
        add_assets(tenant_a, [0.5] * n)
        for _ in range(n):
            live_binding(tenant_a, make_store(f"s-{uuid.uuid4().hex[:8]}", personal), profile)
        running_exports(tenant_a, requester, operator, n)

    client.force_login(operator)
    assert_flat_query_count(add_rows, lambda: client.get("/"))


def _waiting(tenant, n):
    with tenant_scope(tenant):
        for k in range(n):
            emit(
                topic="assets.asset",
                event_type="AssetCreated",
                aggregate_type="assets.asset",
                aggregate_id=str(k),
                payload={},
                tenant=tenant,
            )


def test_a_tenants_backlog_is_counted_up_to_the_bound(
    client, admin_a, tenant_a, tenant_b, monkeypatch
):
    monkeypatch.setattr(counting, "COUNTED_EXACTLY", 3)
    client.force_login(admin_a)
    with tenant_scope(tenant_a):
        waiting = OutboxEvent.objects.count()
    assert waiting <= 3
    # another tenant's waiting events are not counted among this one's
    _waiting(tenant_b, 6)
    html = client.get("/").content.decode()
    assert chart_figures(html, "backlog-and-lag")["outbox backlog"]["Waiting"] == waiting
    assert "counted that far" not in html
    _waiting(tenant_a, 5)
    html = client.get("/").content.decode()
    lag = chart_figures(html, "backlog-and-lag")
    assert lag["outbox backlog"]["Waiting"] == 4
    assert "More than 3 events wait: counted that far." in html


def _published(minute, delivered, failed=0):
    with system_scope():
        DeliveryCount.objects.create(
            minute=minute.replace(second=0, microsecond=0), delivered=delivered, failed=failed
        )


def _floor(moment, minutes: int):
    """The start of the column a moment falls in: minutes since midnight UTC cut to the
    column's width (30 and 240 divide a day)."""
    midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    since = int((moment - midnight).total_seconds() // 60)
    return midnight + timedelta(minutes=since // minutes * minutes)


def test_the_events_chart_shows_a_day_or_a_week_of_the_dispatchers_counts(client, operator):
    now = timezone.now()
    _published(now - timedelta(minutes=10), 2)
    _published(now - timedelta(hours=5), 3, failed=1)
    _published(now - timedelta(days=3), 7)
    _published(now - timedelta(days=8), 100)  # older than any range
    client.force_login(operator)

    html = client.get("/", {"range": "24h"}).content.decode()
    day = chart_figures(html, "events-per-minute")
    assert "Events per 30 minutes, last 24 hours" in html and len(day) == 48
    assert sum(column(day, "Published").values()) == 5
    # The figures table names each column's whole span ("Fri 4 Dec 08:00–08:30").
    assert day[DAY.full_label(_floor(now - timedelta(hours=5), 30))] == {
        "Published": 3,
        "Failed": 1,
        "Total": 4,
    }

    html = client.get("/", {"range": "7d"}).content.decode()
    week = chart_figures(html, "events-per-minute")
    assert "Events per 4 hours, last 7 days" in html and len(week) == 42
    assert sum(column(week, "Published").values()) == 12
    assert week[WEEK.full_label(_floor(now - timedelta(days=3), 240))]["Published"] == 7
    # The switch names the span shown and links the others, the page's address kept.
    assert '<strong aria-current="true">7 d</strong>' in html
    assert 'href="?range=1h"' in html and 'href="?range=24h"' in html

    html = client.get("/", {"range": "a fortnight"}).content.decode()
    assert "Events per minute, last hour" in html  # a range it does not know: the hour
    assert len(chart_figures(html, "events-per-minute")) == 60


def test_a_tenant_is_offered_the_ranges_its_received_events_are_kept_for(
    client, admin_a, tenant_a, topic
):
    add_recent_events(tenant_a, topic, 2)
    client.force_login(admin_a)
    html = client.get("/", {"range": "24h"}).content.decode()
    assert sum(column(chart_figures(html, "events-per-minute"), "Received").values()) == 2
    # The inbox window (72 h) holds a day, not a week: no 7 d, and asking for it shows
    # the hour.
    assert '<strong aria-current="true">24 h</strong>' in html and ">7 d<" not in html
    html = client.get("/", {"range": "7d"}).content.decode()
    assert "Events per minute, last hour" in html


@pytest.mark.parametrize("span", ["24h", "7d"])
def test_a_longer_range_reads_as_many_statements_whatever_the_rows(client, operator, span):
    minutes = itertools.count(1)

    def add_rows(n):
        for _ in range(n):
            _published(timezone.now() - timedelta(minutes=next(minutes) * 37), 1)

    client.force_login(operator)
    assert_flat_query_count(add_rows, lambda: client.get("/", {"range": span}))
