"""The eventing page's and the metrics' counts stay bounded however large the outbox and
the inbox grow (apps.core.counting): exact up to the bound, the planner's estimate above
it, and each answer says which it is."""

import json
import random
from dataclasses import replace
from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import Count, Sum
from django.utils import timezone
from django.utils.html import escape

from apps.core import counting
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import dispatcher, selectors
from apps.eventing.models import (
    DeadLetter,
    DeliveryCount,
    DispatchLane,
    InboxEntry,
    OutboxEvent,
    UncertainEffect,
)
from tests.core.test_prepared import prepared_plans
from tests.eventing.factories import make_dead_letter

pytestmark = pytest.mark.django_db


def _outbox(n: int) -> None:
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {OutboxEvent._meta.db_table} (event_id, topic, event_type,
                schema_version, aggregate_type, aggregate_id, lane, occurred_at,
                correlation_id, causation_id, payload)
            SELECT gen_random_uuid(), 't', 'e', 1, 'k', 'a' || g, g %% 16, now(), '', '',
                '{{}}'::jsonb FROM generate_series(1, %s) AS g""",  # noqa: S608
            [n],
        )


def _inbox(consumer: str, n: int) -> None:
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(
            f"""INSERT INTO {InboxEntry._meta.db_table} (consumer, event_id, handled_at)
            SELECT %s, gen_random_uuid(), now() FROM generate_series(1, %s)""",  # noqa: S608
            [consumer, n],
        )


def _analyze(model) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {model._meta.db_table}")


def test_the_backlog_is_exact_up_to_the_bound_and_estimated_past_it(monkeypatch):
    monkeypatch.setattr(counting, "COUNTED_EXACTLY", 10)
    _outbox(10)
    assert selectors.outbox_backlog()[:2] == (10, False)
    _outbox(30)
    _analyze(OutboxEvent)
    # 40 rows: past the bound, the planner's figure (ANALYZE read them all)
    assert selectors.outbox_backlog()[:2] == (40, True)
    _outbox(50)
    # not analysed since: the figure is still the planner's (40), not a count (90)
    waiting, estimated, oldest = selectors.outbox_backlog()
    assert (waiting, estimated) == (40, True) and oldest is not None


@pytest.fixture
def clock(monkeypatch):
    """A bound of 10, an outbox of 30 past it as ANALYZE left it, and the clock the
    counts' memory reads, to move by hand."""
    monkeypatch.setattr(counting, "COUNTED_EXACTLY", 10)
    now = [1000.0]
    monkeypatch.setattr(counting.time, "monotonic", lambda: now[0])
    _outbox(30)
    _analyze(OutboxEvent)
    return now


def test_a_backlog_past_the_bound_is_not_counted_again_for_a_few_seconds(clock):
    # The eventing page and the metrics count it on every view; past the bound, each
    # process counts it once each PAST_BOUND_SECONDS, and shows the estimate meanwhile.
    assert selectors.overview().backlog == 30
    with system_scope():
        OutboxEvent.objects.filter(pk__in=OutboxEvent.objects.values("pk")[:27]).delete()
    # the page and the dispatcher's figure alike answer the estimate, not a count of 3
    assert (selectors.overview().backlog, selectors.overview().backlog_estimated) == (30, True)
    assert selectors.outbox_backlog()[:2] == (30, True)
    clock[0] += counting.PAST_BOUND_SECONDS + 1
    assert (selectors.overview().backlog, selectors.overview().backlog_estimated) == (3, False)
    assert selectors.outbox_backlog()[:2] == (3, False)


def test_the_overview_keeps_one_plan_for_each_of_its_statements(clock):
    # Counted, then remembered past the bound, then counted again: each of the two
    # statements is prepared once and planned once for all its runs, not once a run.
    connection.ensure_connection()
    runs = connection.connection.prepare_threshold + 6
    for _ in range(runs):
        selectors.overview()  # counted: remembered past the bound from now on
        selectors.overview()  # remembered
        clock[0] += counting.PAST_BOUND_SECONDS + 1
    plans = prepared_plans("SELECT %(SELECT count(*) FROM eventing_dispatchlane%")
    assert len(plans) == 2
    assert all(custom <= 5 and generic > 0 for custom, generic in plans), plans


def test_never_analysed_the_estimate_is_the_bound(monkeypatch):
    monkeypatch.setattr(counting, "COUNTED_EXACTLY", 10)
    monkeypatch.setattr(counting, "table_estimate", lambda cursor, table: 0)
    _outbox(25)
    assert selectors.outbox_backlog()[:2] == (11, True)


def test_each_consumer_inbox_is_counted_up_to_the_bound(monkeypatch):
    monkeypatch.setattr(counting, "COUNTED_EXACTLY", 10)
    _inbox("alpha", 3)
    _inbox("bravo", 12)
    _inbox("charlie", 40)
    _inbox("delta", 10)
    # As never analysed (the planner's row count survives a test's rollback, so another
    # test's ANALYZE may have left one): past the bound, the bound, said to be estimated.
    with monkeypatch.context() as unanalysed:
        unanalysed.setattr(counting, "table_estimate", lambda cursor, table: 0)
        before = selectors.inbox_sizes()
    assert list(before) == ["alpha", "bravo", "charlie", "delta"]
    assert before["alpha"] == (3, False) and before["delta"] == (10, False)
    assert before["bravo"] == (11, True) and before["charlie"] == (11, True)
    _analyze(InboxEntry)
    after = selectors.inbox_sizes()
    # ANALYZE read every row: each consumer's share of the table, as the planner judges
    # it, is its count give or take the planner's rounding
    assert after["bravo"].estimated and abs(after["bravo"].n - 12) <= 1
    assert after["charlie"].estimated and abs(after["charlie"].n - 40) <= 2
    assert after["alpha"] == (3, False)


def test_the_overview_the_api_and_the_page_say_which_figures_are_estimates(
    monkeypatch, api, operator
):
    monkeypatch.setattr(counting, "COUNTED_EXACTLY", 10)
    _outbox(20)
    _inbox("alpha", 2)
    _inbox("bravo", 30)
    _analyze(OutboxEvent)
    _analyze(InboxEntry)
    api.force_login(operator)
    body = api.get("/api/v1/eventing/overview/").json()
    assert body["backlog"] == 20 and body["backlog_estimated"] is True
    sizes = body["inbox_sizes"]
    assert sizes["alpha"] == 2 and abs(sizes["bravo"] - 30) <= 2
    assert body["inbox_sizes_estimated"] == ["bravo"]
    page = api.get("/eventing/").content.decode()
    assert '<p class="figure">≈ 20</p>' in page
    assert "an estimate: counted exactly up to 10 ·" in page
    assert "each consumer's events are counted exactly up to 10." in page
    assert "<td>alpha</td><td>2</td>" in page
    assert f"<td>bravo</td><td>≈ {sizes['bravo']}</td>" in page


def test_small_figures_are_exact_and_say_so(api, operator, scrape):
    _outbox(3)
    _inbox("alpha", 2)
    api.force_login(operator)
    body = api.get("/api/v1/eventing/overview/").json()
    assert (body["backlog"], body["backlog_estimated"]) == (3, False)
    assert body["inbox_sizes"] == {"alpha": 2} and body["inbox_sizes_estimated"] == []
    assert "≈" not in api.get("/eventing/").content.decode()
    assert scrape()["steward_outbox_backlog"] == 3


def _plan_nodes(plan):
    yield plan
    for child in plan.get("Plans", ()):
        yield from _plan_nodes(child)


def test_counting_a_large_inbox_and_outbox_reads_a_bounded_number_of_rows():
    """Three consumers with 30,000 handled events each and 30,000 waiting events, as
    ANALYZE leaves them, the planner's settings as they are: no statement reads more than
    the bound's rows of any one consumer, or of the outbox."""
    for consumer in ("alpha", "bravo", "charlie"):
        _inbox(consumer, 30_000)
    _outbox(30_000)
    _analyze(InboxEntry)
    _analyze(OutboxEvent)
    bound = counting.COUNTED_EXACTLY + 1
    now = timezone.now()
    statements = [
        (selectors._INBOX_SIZES, [bound], 3),
        (selectors.BACKLOG_COUNT, [bound], 1),
        # the overview's one statement: the outbox and the three inboxes, as above
        (
            selectors._OVERVIEW_FIGURES[False],
            [bound, OutboxEvent._meta.db_table, now, now, now, "dead", bound],
            4,
        ),
        # and while the backlog is remembered past the bound: the three inboxes alone
        (
            selectors._OVERVIEW_FIGURES[True],
            [bound, OutboxEvent._meta.db_table, now, now, now, "dead", bound],
            3,
        ),
    ]
    with system_scope(), connection.cursor() as cursor:
        for sql, params, groups in statements:
            cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
            plan = cursor.fetchone()[0]
            plan = json.loads(plan) if isinstance(plan, str) else plan
            scans = [
                node
                for node in _plan_nodes(plan[0]["Plan"])
                if node.get("Relation Name")
                in (InboxEntry._meta.db_table, OutboxEvent._meta.db_table)
            ]
            assert scans
            read = sum(
                node["Actual Rows"] * node["Actual Loops"] + node.get("Rows Removed by Filter", 0)
                for node in scans
            )
            # the bound for each consumer (or the outbox), and a few rows to step between
            assert read <= groups * bound + 2 * groups + 2, (read, scans)


def test_the_operators_dashboard_says_when_the_backlog_is_an_estimate(
    monkeypatch, client, operator
):
    monkeypatch.setattr(counting, "COUNTED_EXACTLY", 10)
    client.force_login(operator)
    _outbox(5)
    said = escape("The outbox backlog is PostgreSQL's estimate: counted exactly up to 10.")
    assert said not in client.get("/").content.decode()
    _outbox(20)
    _analyze(OutboxEvent)
    assert said in client.get("/").content.decode()


def _overview_read_figure_by_figure() -> selectors.Overview:
    """The overview as it was read before its figures became one statement: each figure
    by the selector or query that reads it alone (the dashboard's and /metrics' backlog,
    delivery_rate, inbox_sizes, and the ORM's counts)."""
    backlog = selectors.outbox_backlog()
    series = selectors.delivery_rate()
    inbox = selectors.inbox_sizes()
    hour_ago = timezone.now() - timedelta(hours=1)
    with system_scope():
        effects = dict(
            UncertainEffect.objects.values_list("state").annotate(n=Count("id")).order_by()
        )
        dead = DeadLetter.objects.filter(state=DeadLetter.State.DEAD).count()
        failed = DeliveryCount.objects.filter(
            minute__gte=hour_ago, subscription__isnull=False
        ).aggregate(f=Sum("failed"))["f"]
        lanes = DispatchLane.objects.filter(next_attempt_at__gt=timezone.now()).count()
    return selectors.Overview(
        backlog=backlog.waiting,
        backlog_estimated=backlog.estimated,
        oldest_age_seconds=backlog.oldest_age_seconds,
        lanes_backing_off=lanes,
        delivered_last_hour=sum(point.delivered for point in series),
        failed_last_hour=failed or 0,
        per_minute=series,
        dead_letters=dead,
        inbox_sizes={consumer: size.n for consumer, size in inbox.items()},
        inbox_sizes_estimated=[consumer for consumer, size in inbox.items() if size.estimated],
        effects=effects,
    )


@pytest.mark.parametrize("seed", range(4))
def test_the_overviews_one_statement_reads_what_its_figures_read_alone(
    seed, monkeypatch, tenant_a, tenant_b, topic, webhook_subscription
):
    """Generated outboxes, inboxes (some past the bound), deliveries per minute, dead
    letters, effects and lanes: the overview's one statement answers every figure as the
    figure read alone does."""
    monkeypatch.setattr(counting, "COUNTED_EXACTLY", 10)
    rnd = random.Random(seed)
    _outbox(rnd.choice([0, 4, 10, 11, 35]))
    for consumer in rnd.sample(["alpha", "bravo", "charlie", "delta"], rnd.randint(0, 4)):
        _inbox(consumer, rnd.choice([1, 9, 10, 11, 30]))
    if rnd.random() < 0.5:
        _analyze(OutboxEvent)
        _analyze(InboxEntry)
    now = timezone.now().replace(second=0, microsecond=0)
    DeliveryCount.objects.bulk_create(
        DeliveryCount(
            minute=now - timedelta(minutes=ago),
            subscription=subscription,
            delivered=rnd.randint(0, 50),
            failed=rnd.randint(0, 3),
        )
        for ago in rnd.sample(range(70), 40)  # some older than the hour
        for subscription in (None, webhook_subscription)
    )
    for n in range(rnd.randint(0, 3)):
        make_dead_letter(rnd.choice([tenant_a, tenant_b]), topic, webhook_subscription, n=n)
    for n in range(rnd.randint(0, 8)):
        tenant = rnd.choice([tenant_a, tenant_b])
        with tenant_scope(tenant):
            UncertainEffect.objects.create(
                tenant=tenant,
                actor="test",
                target_system="billing",
                operation="charge",
                external_ref=f"{seed}-{n}",
                state=rnd.choice(list(UncertainEffect.State)),
            )
    dispatcher.ensure_lanes()
    with system_scope():
        lanes = list(DispatchLane.objects.values_list("lane", flat=True))
        DispatchLane.objects.filter(lane__in=rnd.sample(lanes, rnd.randint(0, 3))).update(
            next_attempt_at=timezone.now() + timedelta(minutes=5)
        )

    with system_scope():
        folded, alone = selectors.overview(), _overview_read_figure_by_figure()

    # the oldest envelope's age is read at each call's own instant
    assert (folded.oldest_age_seconds is None) == (alone.oldest_age_seconds is None)
    if alone.oldest_age_seconds is not None:
        assert abs(folded.oldest_age_seconds - alone.oldest_age_seconds) < 5
    assert replace(folded, oldest_age_seconds=None) == replace(alone, oldest_age_seconds=None)
