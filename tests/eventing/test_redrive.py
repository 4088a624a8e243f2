"""A Redis that lost its data is noticed and given back, from the dispatched log, every
event published within the inbox window: in order per aggregate, handled once by each
consumer, once however many processes notice the loss at the same time."""

from collections import Counter
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core.context import Actor
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.core.setup import SetupReport
from apps.eventing import dispatcher, redrive
from apps.eventing.models import DispatchedEvent, DispatchLane, InboxEntry, OutboxEvent
from apps.eventing.transports import HIGH_WATER_KEY, LaneBehind, RedisStreamTransport
from apps.governance import install
from apps.governance.models import RetentionRule
from apps.governance.retention import services as retention
from tests.eventing.factories import pump, recent_events_runner, stream_envelopes
from tests.eventing.test_dispatcher import assert_in_order_once, emit_sequence
from tests.support import run_concurrently


@pytest.fixture
def empty_redis():
    """Empty the test's Redis as a Redis restarted without its files comes back."""

    def flush():
        get_redis().flushdb()

    # Each test commits (transaction=True): the dispatcher's leases compare with the
    # database's now(), which a test's one transaction would hold still.
    yield flush
    RedisStreamTransport.forget_groups()  # no later test may trust groups made before


@pytest.fixture(autouse=True)
def inbox_rule(db):
    """What set-up installs: the rule steward-event-receipts, the inbox's window."""
    install.install_reference_data(SetupReport())
    return RetentionRule.objects.get(name="steward-event-receipts")


def handled(consumer="steward.recent-events"):
    with system_scope():
        return Counter(
            InboxEntry.objects.filter(consumer=consumer).values_list("event_id", flat=True)
        )


@pytest.mark.django_db(transaction=True)
def test_published_events_are_logged_in_the_statement_that_deletes_them(tenant_a, topic):
    ids = emit_sequence(tenant_a, topic, aggregates=2, per_aggregate=3)
    assert dispatcher.drain() == 6
    with system_scope():
        assert not OutboxEvent.objects.exists()
        logged = list(DispatchedEvent.objects.order_by("id"))
        assert [e.event_id for e in logged] == ids
        assert logged[0].payload == {"seq": 0} and logged[0].tenant_id == tenant_a.pk
        marks = dict(DispatchLane.objects.values_list("lane", "published_through"))
    assert {lane: marks[lane] for lane in {e.lane for e in logged}} == {
        lane: max(e.id for e in logged if e.lane == lane) for lane in {e.lane for e in logged}
    }
    assert redrive.lost_lanes(RedisStreamTransport()) == {}


@pytest.mark.django_db(transaction=True)
def test_after_a_flushall_every_event_in_the_window_is_delivered_again_and_handled_once(
    tenant_a, topic, empty_redis
):
    runner = recent_events_runner(topic)
    consumed = emit_sequence(tenant_a, topic, aggregates=4, per_aggregate=5)
    dispatcher.drain()
    pump(runner)  # handled before the loss
    unread = emit_sequence(tenant_a, topic, aggregates=4, per_aggregate=3, start=5)
    dispatcher.drain()  # published, not read yet when Redis loses it
    too_old = emit_sequence(tenant_a, topic, aggregates=1, per_aggregate=2, start=100)
    dispatcher.drain()
    with tenant_scope(tenant_a):
        aged = DispatchedEvent.objects.filter(event_id__in=too_old).update(
            dispatched_at=timezone.now() - redrive.window() - timedelta(minutes=1)
        )
    assert aged == 2

    with system_scope():
        unread_lanes = set(
            DispatchedEvent.objects.filter(event_id__in=unread).values_list("lane", flat=True)
        )
    empty_redis()
    assert unread_lanes and set(redrive.lost_lanes(RedisStreamTransport())) >= unread_lanes
    later = emit_sequence(tenant_a, topic, aggregates=4, per_aggregate=2, start=8)
    dispatcher.drain()  # notices the loss and re-drives before anything new goes out
    pump(runner)

    # then every event of the window is in the stream again, each once, and the new ones
    # after the old ones of their aggregate; the ones past the window are not
    window = consumed + unread + later
    assert_in_order_once(stream_envelopes(topic), window)
    assert handled() == Counter({event_id: 1 for event_id in window})
    assert redrive.lost_lanes(RedisStreamTransport()) == {}
    assert dispatcher.drain() == 0 and len(stream_envelopes(topic)) == len(window)


@pytest.mark.django_db(transaction=True)
def test_a_dispatcher_holding_a_lane_re_drives_it_before_its_own_batch(
    tenant_a, topic, empty_redis
):
    before = emit_sequence(tenant_a, topic, aggregates=1, per_aggregate=4)
    dispatcher.drain()
    empty_redis()
    after = emit_sequence(tenant_a, topic, aggregates=1, per_aggregate=2, start=4)
    # Straight to the lane, without the drain's check: the publish script refuses the
    # batch, the lane is re-driven, then the batch goes.
    assert dispatcher.dispatch_lane_once() == 2
    assert_in_order_once(stream_envelopes(topic), before + after)
    with system_scope():
        lane = DispatchedEvent.objects.get(event_id=after[-1]).lane
        published = DispatchLane.objects.get(lane=lane).published_through
    assert int(get_redis().hget(HIGH_WATER_KEY, lane)) == published


@pytest.mark.django_db(transaction=True)
def test_processes_noticing_the_same_loss_at_once_re_drive_it_once(tenant_a, topic, empty_redis):
    ids = emit_sequence(tenant_a, topic, aggregates=20, per_aggregate=10)
    dispatcher.drain()
    empty_redis()
    counts, errors = run_concurrently(redrive.redrive_lost_lanes, 4)
    assert errors == []
    assert sum(counts) == len(ids)
    assert_in_order_once(stream_envelopes(topic), ids)
    counts, errors = run_concurrently(redrive.redrive_lost_lanes, 2)  # and again: nothing
    assert (counts, errors) == ([0, 0], [])


@pytest.mark.django_db(transaction=True)
def test_a_second_loss_during_a_re_drive_is_noticed_from_where_redis_is(
    tenant_a, topic, empty_redis, settings
):
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "DISPATCH_BATCH": 3}
    ids = emit_sequence(tenant_a, topic, aggregates=1, per_aggregate=7)
    dispatcher.drain()
    empty_redis()
    real_publish = RedisStreamTransport.publish
    calls = []

    def publish_then_lose(self, envelopes, **kwargs):
        real_publish(self, envelopes, **kwargs)
        calls.append(len(envelopes))
        if len(calls) == 1:
            empty_redis()  # lost again after the first re-driven batch

    RedisStreamTransport.publish = publish_then_lose
    try:
        redrive.redrive_lost_lanes()
    except LaneBehind:
        pass  # the re-drive stops; the next check starts it again
    finally:
        RedisStreamTransport.publish = real_publish
    assert redrive.redrive_lost_lanes() == 7
    assert_in_order_once(stream_envelopes(topic), ids)


@pytest.mark.django_db(transaction=True)
def test_the_re_drive_window_is_the_inbox_rule_in_force_not_a_setting(
    tenant_a, topic, empty_redis, inbox_rule, operator, settings
):
    # given an operator who keeps handled-event receipts ten days, and a setting that
    # still says one hour
    op = Actor(user=operator)
    retention.rule_update(actor=op, rule=inbox_rule, period_days=10)
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "INBOX_RETENTION_HOURS": 1}
    assert redrive.window() == timedelta(days=10)
    # and events dispatched five days ago, inside the inboxes' memory, never read
    runner = recent_events_runner(topic)
    old = emit_sequence(tenant_a, topic, aggregates=2, per_aggregate=2)
    dispatcher.drain()
    with tenant_scope(tenant_a):
        DispatchedEvent.objects.filter(event_id__in=old).update(
            dispatched_at=timezone.now() - timedelta(days=5)
        )
    # when Redis loses them, they are re-driven and handled once
    empty_redis()
    dispatcher.drain()
    pump(runner)
    assert handled() == Counter({event_id: 1 for event_id in old})
    # and with no enabled rule the inboxes forget nothing: the window is the whole log
    retention.rule_update(actor=op, rule=inbox_rule, enabled=False)
    assert redrive.window() is None
