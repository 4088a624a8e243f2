"""The runners (apps.eventing.consumers): each event handled once, failures retried then
dead-lettered, dead runners' work taken over, a standby ready, replays delivered."""

import dataclasses
import threading
import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import dispatcher
from apps.eventing.consumer_registry import HANDLERS
from apps.eventing.consumers import (
    Handler,
    consumer_runner,
    webhook_runner,
)
from apps.eventing.envelope import Envelope
from apps.eventing.models import DeadLetter, DeliveryCount, InboxEntry, RecentEvent
from apps.eventing.services import (
    dead_letter_redeliver,
    dead_letter_replay,
    dead_letters_redeliver_queued,
    sync_consumer_subscriptions,
)
from apps.eventing.transports import RedisStreamTransport
from apps.registry.models import Subscription
from apps.tenancy.models import AuditEvent
from tests.eventing.factories import (
    SECRET,
    emit,
    make_dead_letter,
    pump,
    recent_events_runner,
    subscribe,
    webhook,
    write_events,
)
from tests.support import LocalServer, wait_for

pytestmark = pytest.mark.django_db


def recent_ids():
    with system_scope():
        return sorted(RecentEvent.objects.values_list("event_id", flat=True))


def test_events_are_handled_once_even_when_delivered_again(tenant_a, tenant_b, topic):
    runner = recent_events_runner(topic)
    envelopes = write_events(tenant_a, topic, 3) + write_events(tenant_b, topic, 2, aggregate="b-1")
    dispatcher.drain()
    # the same envelopes published a second and third time, as after a dispatcher crash
    RedisStreamTransport().publish(envelopes)
    RedisStreamTransport().publish(envelopes[:2])
    pump(runner)
    assert recent_ids() == sorted(e.event_id for e in envelopes)
    with system_scope():
        assert InboxEntry.objects.filter(consumer="steward.recent-events").count() == 5
    # each tenant's inbox rows are that tenant's
    with tenant_scope(tenant_b):
        assert InboxEntry.objects.count() == 2


def test_a_handler_that_always_raises_is_dead_lettered_and_others_keep_flowing(
    tenant_a, topic, fast_retries
):
    subscription = subscribe(topic, "test.picky")

    def picky(envelope):
        if envelope.payload["n"] == 1:
            raise ValueError("cannot digest n=1")

    runner = consumer_runner(Handler("test.picky", None, picky), [subscription])
    envelopes = write_events(tenant_a, topic, 4)
    dispatcher.drain()
    pump(runner)
    with system_scope():
        handled = set(
            InboxEntry.objects.filter(consumer="test.picky").values_list("event_id", flat=True)
        )
    assert handled == {envelopes[n].event_id for n in (0, 2, 3)}
    with system_scope():
        [dead] = DeadLetter.objects.filter(subscription=subscription)
    assert dead.event_id == envelopes[1].event_id
    assert dead.attempts == fast_retries["MAX_ATTEMPTS"]
    assert "cannot digest n=1" in dead.error
    assert dead.envelope["payload"] == {"n": 1}
    subscription.refresh_from_db()
    assert subscription.consecutive_failures == 0  # later events succeeded
    # nothing is left pending in the group
    assert get_redis().xpending(f"steward:stream:{topic.name}", "test.picky")["pending"] == 0


def test_entries_left_pending_by_a_dead_runner_are_reclaimed(tenant_a, topic, settings):
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "RECLAIM_IDLE_SECONDS": 0}
    runner = recent_events_runner(topic)
    envelopes = write_events(tenant_a, topic, 3)
    dispatcher.drain()
    client = get_redis()
    # a runner that read the entries and died before handling them
    client.xreadgroup("steward.recent-events", "dead-runner", {f"steward:stream:{topic.name}": ">"})
    assert runner.read_once(client) == 0  # nothing new for the group
    assert runner.reclaim(client) == 3
    assert recent_ids() == sorted(e.event_id for e in envelopes)
    assert client.xpending(f"steward:stream:{topic.name}", "steward.recent-events")["pending"] == 0


def test_an_entry_delivered_too_often_goes_to_dead_letters(tenant_a, topic, settings, fast_retries):
    settings.STEWARD_EVENTING = {**fast_retries, "RECLAIM_IDLE_SECONDS": 0}
    runner = recent_events_runner(topic)
    [envelope] = write_events(tenant_a, topic, 1)
    dispatcher.drain()
    client = get_redis()
    stream = f"steward:stream:{topic.name}"
    client.xreadgroup("steward.recent-events", "crashing-runner", {stream: ">"})
    for _ in range(fast_retries["MAX_ATTEMPTS"]):  # it crashed each time it took the entry
        client.xautoclaim(stream, "steward.recent-events", "crashing-runner", 0, start_id="0-0")
    runner.reclaim(client)
    assert recent_ids() == []
    with system_scope():
        dead = DeadLetter.objects.get(event_id=envelope.event_id)
    assert dead.attempts > fast_retries["MAX_ATTEMPTS"]
    assert client.xpending(stream, "steward.recent-events")["pending"] == 0


def test_an_unreadable_stream_entry_goes_to_dead_letters(tenant_a, topic):
    runner = recent_events_runner(topic)
    get_redis().xadd(f"steward:stream:{topic.name}", {"envelope": "{not json"})
    pump(runner)
    with system_scope():
        dead = DeadLetter.objects.get(event_type="unreadable")
    assert dead.tenant_id is None and "unreadable entry" in dead.error
    assert dead.envelope["payload"]["stream"] == f"steward:stream:{topic.name}"


def test_events_of_a_tenant_deleted_since_are_dropped_and_do_not_block_the_rest(
    tenant_a, topic, caplog
):
    runner = recent_events_runner(topic)
    later = write_events(tenant_a, topic, 2)
    # An event that left before its tenant was deleted (no tenant of that id remains),
    # ahead of the others in the stream.
    orphan = dataclasses.replace(later[0], event_id=uuid.uuid4(), tenant_id=uuid.uuid4())
    RedisStreamTransport().publish([orphan])
    dispatcher.drain()
    pump(runner)
    assert recent_ids() == sorted(e.event_id for e in later)
    assert "no longer exists" in caplog.text
    client = get_redis()
    assert client.xpending(f"{runner.streams[0]}", runner.group)["pending"] == 0


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("webhook_secret")
def test_a_failing_receiver_is_retried_with_backoff_until_it_answers(tenant_a, topic, fast_retries):
    answers = iter([500, 503, 200, 200])
    with LocalServer(respond=lambda r: (next(answers), {})) as server:
        subscription = webhook(topic, server.url)
        runner = webhook_runner(subscription)
        emit(tenant_a, topic, 2)
        pump(runner)
    ids = [r.headers["webhook-id"] for r in server.received]
    assert len(ids) == 4 and ids[0] == ids[1] == ids[2] != ids[3]  # in order, first retried
    subscription.refresh_from_db()
    assert subscription.consecutive_failures == 0 and subscription.last_delivered_at
    with system_scope():
        assert not DeadLetter.objects.exists()
    counts = DeliveryCount.objects.filter(subscription=subscription)
    assert sum(c.delivered for c in counts) == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("webhook_secret")
def test_a_receiver_that_keeps_failing_sends_the_envelope_to_dead_letters(
    tenant_a, topic, fast_retries
):
    with LocalServer(respond=lambda r: (500, {"error": "boom"})) as server:
        subscription = webhook(topic, server.url)
        [envelope] = emit(tenant_a, topic, 1)
        pump(webhook_runner(subscription))
    assert len(server.received) == fast_retries["MAX_ATTEMPTS"]
    with system_scope():
        dead = DeadLetter.objects.get(subscription=subscription)
    assert dead.event_id == envelope.event_id
    # what happened, not what the peer answered (no status, no body: no port scanner)
    assert dead.error == "TransportError: answered with an error"
    subscription.refresh_from_db()
    assert subscription.last_error == dead.error
    assert subscription.consecutive_failures == fast_retries["MAX_ATTEMPTS"]
    assert SECRET not in dead.error and SECRET not in subscription.last_error


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("webhook_secret")
def test_a_receiver_that_times_out_never_blocks_other_subscriptions(
    tenant_a, topic, settings, fast_retries
):
    settings.STEWARD_EVENTING = {**fast_retries, "WEBHOOK_TIMEOUT_SECONDS": 0.3, "MAX_ATTEMPTS": 50}
    with LocalServer(delay=5) as stuck, LocalServer() as healthy, LocalServer(delay=0.1) as slow:
        runners = [
            webhook_runner(webhook(topic, stuck.url, "stuck")),
            webhook_runner(webhook(topic, healthy.url, "healthy")),
            webhook_runner(webhook(topic, slow.url, "slow")),
        ]
        threads = [threading.Thread(target=r.run_forever, daemon=True) for r in runners]
        for thread in threads:
            thread.start()
        try:
            emit(tenant_a, topic, 5)
            wait_for(lambda: len(healthy.received) == 5 and len(slow.received) == 5)
            assert len(stuck.received) >= 1  # still retrying its first envelope
            stuck_sub = Subscription.objects.get(consumer__name="stuck")
            assert stuck_sub.consecutive_failures >= 1 and "timed out" in stuck_sub.last_error
        finally:
            for runner in runners:
                runner.stop.set()
            for thread in threads:
                thread.join(timeout=10)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("webhook_secret")
def test_two_consumer_processes_deliver_in_order_once_and_the_standby_takes_over(tenant_a, topic):
    with LocalServer(delay=0.005) as server:
        subscription = webhook(topic, server.url)
        first, second = webhook_runner(subscription), webhook_runner(subscription)
        threads = {
            id(r): threading.Thread(target=r.run_forever, daemon=True) for r in (first, second)
        }
        for thread in threads.values():
            thread.start()
        try:
            emitted = emit(tenant_a, topic, 20)
            wait_for(lambda: len(server.received) >= 20)
            holder = first if get_redis().get(first.lease_key) == first.name.encode() else second
            holder.stop.set()
            threads[id(holder)].join(timeout=15)
            emitted += emit(tenant_a, topic, 5)
            wait_for(lambda: len(server.received) >= 25)
        finally:
            for runner in (first, second):
                runner.stop.set()
            for thread in threads.values():
                thread.join(timeout=15)
    ids = [r.headers["webhook-id"] for r in server.received]
    assert ids == [str(e.event_id) for e in emitted]  # in order, none twice


def test_replay_delivers_to_that_subscription_and_a_new_failure_is_a_new_dead_letter(
    tenant_a, topic, webhook_subscription
):
    answers = iter([500, 200])
    with LocalServer(respond=lambda r: (next(answers), {})) as server:
        Subscription.objects.filter(pk=webhook_subscription.pk).update(endpoint=server.url)
        dead = make_dead_letter(tenant_a, topic, webhook_subscription)
        dead_letter_replay(actor=SYSTEM_ACTOR, dead_letter=dead)
        assert dead_letter_redeliver(dead_letter_id=dead.pk) == "failed"
        # a replay is delivered once
        assert dead_letter_redeliver(dead_letter_id=dead.pk) == "skipped"
        with system_scope():
            again = DeadLetter.objects.get(state="dead")
            assert DeadLetter.objects.get(pk=dead.pk).state == "replayed"
        assert again.event_id == dead.event_id and again.pk != dead.pk
        dead_letter_replay(actor=SYSTEM_ACTOR, dead_letter=again)
        assert dead_letter_redeliver(dead_letter_id=again.pk) == "delivered"
    assert [r.headers["webhook-id"] for r in server.received] == [str(dead.event_id)] * 2
    assert Envelope.from_json(server.received[1].body).event_id == dead.event_id


def test_a_replay_whose_task_was_lost_is_delivered_by_the_sweep(
    tenant_a, topic, webhook_subscription
):

    with LocalServer() as server:
        Subscription.objects.filter(pk=webhook_subscription.pk).update(endpoint=server.url)
        dead = make_dead_letter(tenant_a, topic, webhook_subscription)
        dead_letter_replay(actor=SYSTEM_ACTOR, dead_letter=dead)  # its task never runs here
        assert dead_letters_redeliver_queued() == 0  # too recent: its task may still be on the way
        with tenant_scope(tenant_a):
            DeadLetter.objects.filter(pk=dead.pk).update(
                resolved_at=timezone.now() - timedelta(minutes=1)
            )
        assert dead_letters_redeliver_queued() == 1
    assert [r.headers["webhook-id"] for r in server.received] == [str(dead.event_id)]
    with system_scope():
        assert DeadLetter.objects.get(pk=dead.pk).state == "replayed"


def test_stewards_consumers_are_subscribed_through_the_registry_and_audited(topic):
    first = sync_consumer_subscriptions()
    mine = [s for s in first if s.topic_id == topic.pk]
    assert [s.consumer.name for s in mine] == list(HANDLERS)
    assert sync_consumer_subscriptions() == first  # idempotent
    with system_scope():
        audited = AuditEvent.objects.filter(
            action="subscription.create", object_id__in=[str(s.pk) for s in mine]
        )
        assert audited.count() == len(mine)
