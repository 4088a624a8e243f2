"""Steward's consumers: each event handled once, failures dead-lettered, dead runners' work
taken over."""

import pytest

from apps.core.outbox import NewEvent, emit_many
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import dispatcher
from apps.eventing.consumers import Handler, consumer_runner, handle_envelopes
from apps.eventing.models import DeadLetter, InboxEntry, RecentEvent
from apps.eventing.transports import RedisStreamTransport
from tests.eventing.conftest import recent_events_runner, stream_envelopes, subscribe

pytestmark = pytest.mark.django_db


def emit(tenant, topic, n, *, aggregate="a-1"):
    with tenant_scope(tenant):
        return emit_many(
            [
                NewEvent(
                    topic=topic.name,
                    event_type="e",
                    aggregate_type="thing",
                    aggregate_id=aggregate,
                    payload={"n": i},
                    tenant=tenant,
                )
                for i in range(n)
            ]
        )


def recent_ids():
    with system_scope():
        return sorted(RecentEvent.objects.values_list("event_id", flat=True))


def drain(runner):
    client = get_redis()
    while runner.read_once(client):
        pass


def test_events_are_handled_once_even_when_delivered_again(tenant_a, tenant_b, topic):
    runner = recent_events_runner(topic)
    envelopes = emit(tenant_a, topic, 3) + emit(tenant_b, topic, 2, aggregate="b-1")
    dispatcher.drain()
    # the same envelopes published a second and third time, as after a dispatcher crash
    RedisStreamTransport().publish(envelopes)
    RedisStreamTransport().publish(envelopes[:2])
    drain(runner)
    assert recent_ids() == sorted(e.event_id for e in envelopes)
    with system_scope():
        assert InboxEntry.objects.filter(consumer="steward.recent-events").count() == 5
    # each tenant's inbox rows are that tenant's
    with tenant_scope(tenant_b):
        assert InboxEntry.objects.count() == 2


def test_a_handler_and_its_inbox_row_commit_or_roll_back_together(tenant_a, topic):
    [envelope] = emit(tenant_a, topic, 1)
    calls = []

    def explode(env):
        calls.append(env.event_id)
        raise RuntimeError("the effect failed")

    with pytest.raises(RuntimeError):
        handle_envelopes(Handler("test.exploding", None, explode), [envelope])
    with system_scope():
        assert not InboxEntry.objects.filter(consumer="test.exploding").exists()
    handle_envelopes(Handler("test.exploding", None, lambda env: calls.append("ok")), [envelope])
    handle_envelopes(Handler("test.exploding", None, lambda env: calls.append("again")), [envelope])
    assert calls == [envelope.event_id, "ok"]


def test_a_handler_that_always_raises_is_dead_lettered_and_others_keep_flowing(
    tenant_a, topic, fast_retries
):
    subscription = subscribe(topic, "test.picky")

    def picky(envelope):
        if envelope.payload["n"] == 1:
            raise ValueError("cannot digest n=1")

    runner = consumer_runner(Handler("test.picky", None, picky), [subscription])
    envelopes = emit(tenant_a, topic, 4)
    dispatcher.drain()
    drain(runner)
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
    envelopes = emit(tenant_a, topic, 3)
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
    [envelope] = emit(tenant_a, topic, 1)
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


def test_the_inbox_sweep_removes_rows_older_than_the_window(tenant_a, tenant_b, topic):
    from datetime import timedelta

    from django.utils import timezone

    from apps.eventing.consumers import purge_inbox

    runner = recent_events_runner(topic)
    emit(tenant_a, topic, 2)
    emit(tenant_b, topic, 1, aggregate="b")
    dispatcher.drain()
    drain(runner)
    old = timezone.now() - timedelta(hours=73)
    for tenant in (tenant_a, tenant_b):
        with tenant_scope(tenant):
            InboxEntry.objects.filter(tenant=tenant).update(handled_at=old)
    emit(tenant_a, topic, 1, aggregate="fresh")
    dispatcher.drain()
    drain(runner)
    assert purge_inbox() == 3 + 0  # three old inbox rows; recent events are all fresh
    with system_scope():
        assert InboxEntry.objects.count() == 1
    assert len(stream_envelopes(topic)) == 4


def test_an_envelope_twice_in_one_batch_is_handled_once(tenant_a, topic):
    [envelope] = emit(tenant_a, topic, 1)
    seen = []
    handler = Handler("test.twice", None, lambda env: seen.append(env.event_id))
    assert handle_envelopes(handler, [envelope, envelope]) == 1
    assert seen == [envelope.event_id]


def test_an_unreadable_stream_entry_goes_to_dead_letters(tenant_a, topic):
    runner = recent_events_runner(topic)
    get_redis().xadd(f"steward:stream:{topic.name}", {"envelope": "{not json"})
    drain(runner)
    with system_scope():
        dead = DeadLetter.objects.get(event_type="unreadable")
    assert dead.tenant_id is None and "unreadable entry" in dead.error
    assert dead.envelope["payload"]["stream"] == f"steward:stream:{topic.name}"


def test_events_of_a_tenant_deleted_since_are_dropped_and_do_not_block_the_rest(
    tenant_a, topic, caplog
):
    import dataclasses
    import uuid

    runner = recent_events_runner(topic)
    later = emit(tenant_a, topic, 2)
    # An event that left before its tenant was deleted (no tenant of that id remains),
    # ahead of the others in the stream.
    orphan = dataclasses.replace(later[0], event_id=uuid.uuid4(), tenant_id=uuid.uuid4())
    RedisStreamTransport().publish([orphan])
    dispatcher.drain()
    drain(runner)
    assert recent_ids() == sorted(e.event_id for e in later)
    assert "no longer exists" in caplog.text
    client = get_redis()
    assert client.xpending(f"{runner.streams[0]}", runner.group)["pending"] == 0


def test_the_consumers_process_outlives_a_database_restart(monkeypatch):
    """Found by the chaos drill: the refresh loop of `run_consumers` raised when
    PostgreSQL restarted, and the whole process exited with its runner threads."""
    import threading

    from django.db import OperationalError

    from apps.eventing.management.commands import run_consumers

    stopping = threading.Event()
    calls = []

    def refresh(running):
        calls.append(len(calls))
        if len(calls) == 1:
            raise OperationalError("the database system is shutting down")
        stopping.set()

    command = run_consumers.Command()
    monkeypatch.setattr(command, "refresh", refresh)
    monkeypatch.setattr(run_consumers, "RETRY_SECONDS", 0.01)
    command.run(stopping)
    assert calls == [0, 1]  # went on after the failed refresh, stopped when asked
