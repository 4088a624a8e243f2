"""The eventing page's charts (apps.eventing.charts): throughput per topic and each
consumer's lag equal the counts queried here, and the page's statements stay few."""

from __future__ import annotations

import random
import uuid
from dataclasses import replace
from datetime import timedelta

import pytest
from django.db.models.functions import TruncMinute
from django.urls import reverse
from django.utils import timezone

from apps.console.charts import DAY, WEEK
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import charts, lag, selectors, services
from apps.eventing.models import DeliveryCount, RecentEvent
from apps.eventing.transports import stream_key
from apps.registry.models import Topic
from apps.registry.selectors import topic_names
from tests.console.chart_figures import chart_figures, column
from tests.eventing.factories import add_eventing_rows
from tests.query_counts import assert_flat_query_count, queries_for

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_lag_samples():
    """Redis outlives each test's database: earlier tests' lag samples would be drawn."""
    redis = get_redis()
    for key in redis.scan_iter(lag.LAG_HISTORY_KEY.format(minute="*")):
        redis.delete(key)


def received(tenant, topic, n, minutes_ago):
    with tenant_scope(tenant):
        RecentEvent.objects.bulk_create(
            RecentEvent(
                event_id=uuid.uuid4(),
                topic=topic,
                event_type="e",
                tenant=tenant,
                aggregate_type="k",
                aggregate_id="1",
                occurred_at=timezone.now(),
                received_at=timezone.now() - timedelta(minutes=minutes_ago),
            )
            for _ in range(n)
        )


def behind(topic, *, entries: int, read: int) -> str:
    """The topic's stream with `entries` entries and a group "slow" that was handed the
    first `read` of them and acknowledged none; the stream's key."""
    key = stream_key(topic.name)
    for i in range(entries):
        get_redis().xadd(key, {"n": i})
    get_redis().xgroup_create(key, "slow", id="0")
    get_redis().xreadgroup("slow", "s-1", {key: ">"}, count=read)
    return key


def test_throughput_per_topic_and_lag_per_consumer(client, operator, tenant_a, tenant_b, topic):
    received(tenant_a, "t.one", 4, minutes_ago=1)
    received(tenant_b, "t.one", 2, minutes_ago=5)
    received(tenant_b, "t.two", 3, minutes_ago=5)
    received(tenant_b, "t.two", 9, minutes_ago=90)  # older than the hour
    key = behind(topic, entries=4, read=1)
    client.force_login(operator)
    html = client.get(reverse("eventing:overview")).content.decode()

    figures = chart_figures(html, "throughput-per-topic")
    with system_scope():
        hour = RecentEvent.objects.filter(received_at__gte=timezone.now() - timedelta(minutes=59))
        for name in ("t.one", "t.two"):
            expected = {
                f"{minute:%H:%M}"
                for minute in hour.filter(topic=name)
                .annotate(minute=TruncMinute("received_at"))
                .values_list("minute", flat=True)
            }
            drawn = {label for label, n in column(figures, name.capitalize()).items() if n}
            assert drawn == expected
            assert (
                sum(column(figures, name.capitalize()).values()) == hour.filter(topic=name).count()
            )
    assert sum(column(figures, "T.two").values()) == 3

    lag = chart_figures(html, "consumer-lag")[f"{topic.name}: slow"]
    [group] = get_redis().xinfo_groups(key)
    assert (lag["Waiting"], lag["Not acknowledged"]) == (3, group["pending"]) == (3, 1)


def test_the_lag_chart_and_the_lag_gauge_say_the_same(client, operator, topic, scrape):
    behind(topic, entries=5, read=2)
    client.force_login(operator)
    html = client.get(reverse("eventing:overview")).content.decode()
    drawn = chart_figures(html, "consumer-lag")[f"{topic.name}: slow"]
    gauge = scrape()[f'steward_consumer_lag{{consumer="slow",topic="{topic.name}"}}']
    assert gauge == drawn["Waiting"] + drawn["Not acknowledged"] == 5


def test_lag_over_time_draws_the_minutes_samples(client, operator, topic):
    """Each minute's sample, as the periodic task records it, is the figure drawn for
    that minute; minutes without a sample draw nothing."""
    key = stream_key(topic.name)
    # Redis outlives each test's database: earlier tests' groups would be sampled too
    for name in topic_names():
        get_redis().delete(stream_key(name))
    for i in range(5):
        get_redis().xadd(key, {"n": i})
    get_redis().xgroup_create(key, "slow", id="0")
    now = timezone.now()
    assert services.lag_sample_record(now - timedelta(minutes=3)) == 1  # 5 behind then
    get_redis().xreadgroup("slow", "s-1", {key: ">"}, count=2)
    get_redis().xack(key, "slow", *[e[0] for e in get_redis().xrange(key, count=2)])
    assert services.lag_sample_record(now) == 1  # 3 behind now
    client.force_login(operator)
    html = client.get(reverse("eventing:overview")).content.decode()
    drawn = column(chart_figures(html, "lag-over-time"), f"{topic.name}: slow".capitalize())
    minute = now.replace(second=0, microsecond=0)
    expected = {
        f"{minute - timedelta(minutes=3):%H:%M}": 5,
        f"{minute:%H:%M}": 3,
    }
    assert {label: n for label, n in drawn.items() if n} == expected
    [slow] = lag.consumer_lag()
    assert (slow.consumer, slow.behind) == ("slow", 3)
    # Over a day or a week, the two samples are in the columns holding their minutes,
    # the worse one where they share a column.
    for span in (DAY, WEEK):
        html = client.get(reverse("eventing:overview"), {"range": span.key}).content.decode()
        drawn = column(chart_figures(html, "lag-over-time"), f"{topic.name}: slow".capitalize())
        expected = {}
        for at, behind in ((minute - timedelta(minutes=3), 5), (minute, 3)):
            label = span.full_label(span.start_of(at))
            expected[label] = max(expected.get(label, 0), behind)
        assert {label: n for label, n in drawn.items() if n} == expected


def test_lag_over_time_says_when_nothing_was_sampled(client, operator):
    client.force_login(operator)
    html = client.get(reverse("eventing:overview")).content.decode()
    i = html.index('data-chart="lag-over-time"')
    assert "No lag sampled in the last hour." in html[i - 2000 : i + 2000], html[
        i - 2000 : i + 2000
    ]


def test_the_overview_stays_within_a_few_statements(client, operator, tenant_a):
    """The page's scope (a savepoint in a test, set and restored), the header's tenants,
    then the page's own one: its figures, its charts' counts, its subscriptions and its
    latest events in one statement (apps.eventing.selectors.overview_page). Six (the
    session and the person come from the auth cache once the first page filled it);
    eight while the two tables were querysets of their own, nineteen when each figure and
    chart read its own and the cache held neither."""
    client.force_login(operator)
    client.get(reverse("eventing:overview"))  # the caller's first page fills the auth cache
    few = queries_for(lambda: client.get(reverse("eventing:overview")))
    assert few == 6
    received(tenant_a, "t.one", 30, minutes_ago=2)
    for n in range(3):
        Topic.objects.create(name=f"test.q{uuid.uuid4().hex[:8]}{n}", current_schema_version=1)
    assert queries_for(lambda: client.get(reverse("eventing:overview"))) == few


@pytest.mark.parametrize("seed", range(3))
def test_the_overviews_statement_reads_the_charts_counts_as_the_charts_do(seed, tenant_a, tenant_b):
    """Generated events received over the last hour and before it, on a few topics: the
    counts the page's one statement reads for its charts are those the charts' own
    queries read (events per minute and topic; every topic's name)."""
    rnd = random.Random(seed)
    for _ in range(rnd.randint(0, 12)):
        received(
            rnd.choice([tenant_a, tenant_b]),
            rnd.choice(["t.one", "t.two", "t.three"]),
            rnd.randint(1, 4),
            minutes_ago=rnd.randint(0, 75),
        )
    for n in range(rnd.randint(0, 3)):
        Topic.objects.create(name=f"test.p{uuid.uuid4().hex[:8]}{n}", current_schema_version=1)
    with system_scope():
        page = selectors.overview_page()
        alone = charts._received_per_minute(charts._minutes()[0], by_topic=True)
        names = list(topic_names())
    assert page.received_per_topic == alone
    assert sorted(page.topic_names) == sorted(names)
    assert page.overview == replace(
        selectors.overview(), oldest_age_seconds=page.overview.oldest_age_seconds
    )


@pytest.mark.django_db(False)
def test_the_time_axis_names_each_minute_in_its_own_zone_whatever_was_named_before():
    """The labels are remembered per minute: the same instant in another zone is an equal
    key, and must still be named by its own wall clock."""
    from zoneinfo import ZoneInfo

    minutes = charts._minutes()
    assert charts._labels(minutes) == [f"{m:%H:%M}" for m in minutes]
    for zone in ("Asia/Kolkata", "America/St_Johns", "UTC"):
        there = [m.astimezone(ZoneInfo(zone)) for m in minutes]
        assert there == minutes  # the same instants
        assert charts._labels(there) == [f"{m:%H:%M}" for m in there]
    kolkata = charts._labels(m.astimezone(ZoneInfo("Asia/Kolkata")) for m in minutes[:1])
    assert kolkata != charts._labels(minutes[:1])  # 5:30 apart


def test_lag_now_and_over_time_are_read_together_as_each_alone(topic):
    # given a topic with a stream and two groups, one behind, and a topic with none
    key = stream_key(topic.name)
    get_redis().delete(key)
    for i in range(4):
        get_redis().xadd(key, {"n": i})
    get_redis().xgroup_create(key, "slow", id="0")
    get_redis().xgroup_create(key, "caught-up", id="$")
    get_redis().xreadgroup("slow", "s-1", {key: ">"}, count=1)
    now = timezone.now().replace(second=0, microsecond=0)
    assert services.lag_sample_record(now - timedelta(minutes=1)) >= 2
    minutes = [now - timedelta(minutes=n) for n in range(3)]
    names = [topic.name, "no-stream-yet"]
    # when both are read in one script
    lags, history = lag.lag_now_and_samples(names, minutes)
    # then each is what its own read answers
    assert lags == lag.consumer_lag(names) and history == lag.lag_samples(minutes)
    assert [(x.consumer, x.waiting, x.pending) for x in lags] == [
        ("slow", 3, 1),
        ("caught-up", 0, 0),
    ]
    assert history[f"{topic.name}: slow"] == {now - timedelta(minutes=1): 4}
    get_redis().delete(key)


def card(html: str, key: str) -> str:
    """The chart card holding the chart `key`: its heading, note and footnote."""
    end = html.index("</article>", html.index(f'data-chart="{key}"'))
    return html[html.rindex('<article class="chart-card">', 0, end) : end]


def test_the_eventing_charts_span_a_day_or_a_week_as_far_as_their_figures_are_kept(
    client, operator, tenant_a, tenant_b
):
    """The page's range switch takes every time chart to 24 hours or 7 days; one whose
    figures are not kept that long (received events: the inbox window) shows the longest
    span it has and says so, rather than empty columns."""
    received(tenant_a, "t.one", 2, minutes_ago=1)
    received(tenant_b, "t.two", 5, minutes_ago=60 * 20)
    five_days_ago = timezone.now() - timedelta(days=5)
    with system_scope():
        DeliveryCount.objects.create(
            minute=five_days_ago.replace(second=0, microsecond=0), delivered=7
        )
    client.force_login(operator)

    day = client.get(reverse("eventing:overview"), {"range": "24h"}).content.decode()
    assert "<h2>Events per 30 minutes, last 24 hours</h2>" in day
    assert "<h2>Throughput per topic, last 24 hours</h2>" in day
    throughput = chart_figures(day, "throughput-per-topic")
    assert sum(column(throughput, "T.two").values()) == 5
    assert sum(column(throughput, "T.one").values()) == 2
    assert "are kept" not in card(day, "throughput-per-topic")
    assert "<h2>Lag per consumer, last 24 hours</h2>" in card(day, "lag-over-time")
    assert "No lag sampled in the last 24 hours." in card(day, "lag-over-time")
    assert "are kept" not in card(day, "lag-over-time")

    week = client.get(reverse("eventing:overview"), {"range": "7d"}).content.decode()
    assert '<strong aria-current="true">7 d</strong>' in week
    published = chart_figures(week, "events-per-minute")
    assert sum(column(published, "Published").values()) == 7
    # The figures table names each column's whole span: a week's axis has two Fridays.
    bucket = next(b for b in WEEK.buckets() if b <= five_days_ago < b + WEEK.step)
    assert column(published, "Published")[WEEK.full_label(bucket)] == 7
    assert f"<title>{WEEK.full_label(bucket)}: 7 published</title>" in week
    throughput = card(week, "throughput-per-topic")
    assert "<h2>Throughput per topic, last 24 hours</h2>" in throughput
    assert (
        "Received events are kept 3 days: this chart shows the last 24 hours, not the last 7 days."
        in throughput
    )
    assert sum(column(chart_figures(week, "throughput-per-topic"), "T.two").values()) == 5
    assert "<h2>Lag per consumer, last 7 days</h2>" in card(week, "lag-over-time")
    assert "are kept" not in card(week, "lag-over-time")


def test_a_day_and_a_week_of_lag_show_each_columns_worst_minute(client, operator):
    """Over 24 hours (30-minute columns) and 7 days (4-hour ones) each column draws each
    group's worst minute in it, not its last or its mean, from samples kept as long as
    the range; the footnote says what a column is."""
    now = timezone.now().replace(second=0, microsecond=0)
    earlier = DAY.start_of(now) - timedelta(minutes=28)  # the previous 30 minutes
    three_days_ago = now - timedelta(days=3)
    samples = {
        earlier: {"orders: billing": 5},
        earlier + timedelta(minutes=5): {"orders: billing": 9, "orders: audit": 1},
        earlier + timedelta(minutes=10): {"orders: billing": 2},
        three_days_ago: {"orders: billing": 40},
    }
    for minute, sample in samples.items():
        lag.record_sample(minute, sample)
    client.force_login(operator)

    day = client.get(reverse("eventing:overview"), {"range": "24h"}).content.decode()
    figures = chart_figures(day, "lag-over-time")
    worst = DAY.full_label(DAY.start_of(earlier))
    assert {label: n for label, n in column(figures, "Orders: billing").items() if n} == {worst: 9}
    assert {label: n for label, n in column(figures, "Orders: audit").items() if n} == {worst: 1}
    assert len(figures) == DAY.columns
    assert (
        "Each column shows the most each group was behind in each 30 minutes: "
        "a peak is not averaged away." in card(day, "lag-over-time")
    )

    week = client.get(reverse("eventing:overview"), {"range": "7d"}).content.decode()
    figures = chart_figures(week, "lag-over-time")
    billing = {label: n for label, n in column(figures, "Orders: billing").items() if n}
    assert billing == {
        WEEK.full_label(WEEK.start_of(earlier)): 9,
        WEEK.full_label(WEEK.start_of(three_days_ago)): 40,
    }
    assert len(figures) == WEEK.columns
    assert "in each 4 hours: a peak is not averaged away." in card(week, "lag-over-time")

    # The minute's sample is kept two hours; each column as long as its range spans.
    redis = get_redis()
    assert 0 < redis.ttl(lag.sample_key(earlier)) <= 2 * 3600
    for span, at in ((DAY, earlier), (WEEK, three_days_ago)):
        kept = redis.ttl(lag.sample_key(span.start_of(at), span.step))
        assert kept > span.span.total_seconds()


def test_a_lag_sample_lowers_no_columns_worst():
    """A later, smaller sample of the same minute (overlapping runs of the task) replaces
    the minute's figure but leaves the column's worst as it was."""
    minute = timezone.now().replace(second=0, microsecond=0)
    lag.record_sample(minute, {"orders: billing": 7})
    lag.record_sample(minute, {"orders: billing": 3})
    assert lag.lag_samples([minute]) == {"orders: billing": {minute: 3}}
    for span in (DAY, WEEK):
        start = span.start_of(minute)
        assert lag.lag_samples([start], span.step) == {"orders: billing": {start: 7}}


def test_a_longer_range_reads_the_same_statements_whatever_the_rows(
    client, operator, tenant_a, topic, webhook_subscription
):
    client.force_login(operator)
    for span in ("24h", "7d"):
        assert_flat_query_count(
            lambda n: add_eventing_rows(n, tenant_a, topic, webhook_subscription),
            lambda span=span: client.get(reverse("eventing:overview"), {"range": span}),
        )
