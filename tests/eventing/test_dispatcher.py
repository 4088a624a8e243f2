"""The dispatcher: nothing lost, nothing reordered per aggregate, with several at once,
with a dispatcher killed mid-batch, and through a Redis outage."""

import os
import signal
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

import pytest
from django.db import connection

from apps.core.outbox import NewEvent, emit_many
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import dispatcher
from apps.eventing.models import DispatchLane, OutboxEvent, RecentEvent
from tests.eventing.factories import recent_events_runner, stream_envelopes
from tests.support import database_url, run_concurrently

ROOT = Path(__file__).resolve().parents[2]


def emit_sequence(
    tenant, topic, *, aggregates: int, per_aggregate: int, chunk: int = 50, start: int = 0
):
    """Emit `per_aggregate` numbered events for each aggregate, interleaved, in chunks
    of committed transactions; returns all event ids."""
    events = [
        NewEvent(
            topic=topic.name,
            event_type="counted",
            aggregate_type="counter",
            aggregate_id=f"agg-{a}",
            payload={"seq": n},
            tenant=tenant,
        )
        for n in range(start, start + per_aggregate)
        for a in range(aggregates)
    ]
    ids = []
    for start in range(0, len(events), chunk):
        with tenant_scope(tenant):
            ids += [e.event_id for e in emit_many(events[start : start + chunk])]
    return ids


def assert_in_order_once(envelopes, expected_ids, *, duplicates_allowed=False):
    seen = [e.event_id for e in envelopes]
    assert set(seen) == set(expected_ids), "lost or foreign events"
    if not duplicates_allowed:
        assert len(seen) == len(expected_ids), "the dispatcher published an event twice"
    by_aggregate = defaultdict(list)
    first_seen = set()
    for envelope in envelopes:
        if envelope.event_id in first_seen:
            continue  # a redelivery after a crash: the consumer's inbox drops it
        first_seen.add(envelope.event_id)
        by_aggregate[envelope.aggregate_id].append(envelope.payload["seq"])
    for aggregate, seqs in by_aggregate.items():
        assert seqs == sorted(seqs), f"{aggregate} out of order: {seqs}"


def outbox_count():
    with system_scope():
        return OutboxEvent.objects.count()


@pytest.mark.django_db
def test_the_dispatcher_moves_envelopes_to_the_topic_stream_and_deletes_them(tenant_a, topic):
    ids = emit_sequence(tenant_a, topic, aggregates=3, per_aggregate=4)
    assert dispatcher.drain() == 12
    assert outbox_count() == 0
    envelopes = stream_envelopes(topic)
    assert_in_order_once(envelopes, ids)
    assert envelopes[0].topic == topic.name and envelopes[0].schema_version == 3
    assert envelopes[0].tenant_id == tenant_a.pk


@pytest.mark.django_db(transaction=True)
def test_concurrent_dispatchers_lose_nothing_duplicate_nothing_and_keep_aggregate_order(
    tenant_a, topic, settings
):
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "DISPATCH_BATCH": 7}
    ids = emit_sequence(tenant_a, topic, aggregates=40, per_aggregate=25)  # 1,000 events
    published, errors = run_concurrently(dispatcher.drain, 4)
    assert errors == []
    assert sum(published) == len(ids)
    assert sum(1 for n in published if n) >= 2, "the dispatchers did not actually overlap"
    assert outbox_count() == 0
    assert_in_order_once(stream_envelopes(topic), ids)


@pytest.mark.django_db(transaction=True)
def test_a_dispatcher_killed_mid_batch_loses_nothing_and_consumers_handle_each_once(
    tenant_a, topic, tmp_path
):
    runner = recent_events_runner(topic)
    ids = emit_sequence(tenant_a, topic, aggregates=5, per_aggregate=20)
    marker = tmp_path / "published"
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "STEWARD_LANE_LEASE_SECONDS": "1",
        "STEWARD_DISPATCH_BATCH": "30",
    }
    victim = subprocess.Popen(
        [sys.executable, "-m", "tests.eventing.paused_dispatcher", str(marker)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline and victim.poll() is None:
        time.sleep(0.05)
    if not marker.exists():
        victim.kill()
        pytest.fail(
            f"the dispatcher never paused between publish and delete: {victim.communicate()[0]!r}"
        )
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    assert outbox_count() == len(ids)  # published but not deleted

    # Once the dead dispatcher's lease runs out, the next one takes the lane over.
    deadline = time.monotonic() + 30
    while outbox_count() and time.monotonic() < deadline:
        dispatcher.drain()
        time.sleep(0.2)
    assert outbox_count() == 0
    envelopes = stream_envelopes(topic)
    assert len(envelopes) > len(ids)  # the killed batch went out twice
    assert_in_order_once(envelopes, ids, duplicates_allowed=True)

    client = get_redis()
    while runner.read_once(client):
        pass
    with system_scope():
        handled = list(RecentEvent.objects.values_list("event_id", flat=True))
    assert sorted(handled) == sorted(ids)


@pytest.mark.django_db(transaction=True)
def test_a_redis_outage_keeps_the_outbox_growing_and_delivery_resumes_by_itself(
    tenant_a, topic, settings
):
    settings.STEWARD_EVENTING = {
        **settings.STEWARD_EVENTING,
        "BACKOFF_BASE_SECONDS": 0.05,
        "BACKOFF_MAX_SECONDS": 0.2,
    }
    working_url = settings.REDIS_URL
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    first = emit_sequence(tenant_a, topic, aggregates=4, per_aggregate=5)
    assert dispatcher.drain() == 0
    second = emit_sequence(tenant_a, topic, aggregates=4, per_aggregate=5, start=5)
    assert outbox_count() == 40
    with system_scope():
        assert DispatchLane.objects.exclude(failures=0).exists()

    settings.REDIS_URL = working_url
    deadline = time.monotonic() + 30
    while outbox_count() and time.monotonic() < deadline:
        dispatcher.drain()
        time.sleep(0.05)
    assert outbox_count() == 0
    assert_in_order_once(stream_envelopes(topic), first + second)
    assert not DispatchLane.objects.exclude(failures=0).exists()


@pytest.mark.django_db(transaction=True)
def test_events_of_one_aggregate_from_overlapping_transactions_keep_commit_order(tenant_a, topic):
    """Ids are handed out at INSERT; without the aggregate lock a later transaction that
    commits first would be dispatched before an earlier, slower one."""
    inserted, release = threading.Event(), threading.Event()

    def event(seq):
        return NewEvent(
            topic=topic.name,
            event_type="counted",
            aggregate_type="counter",
            aggregate_id="shared",
            payload={"seq": seq},
            tenant=tenant_a,
        )

    def slow_producer():
        with tenant_scope(tenant_a):
            emit_many([event(1)])
            inserted.set()
            release.wait(timeout=30)
        connection.close()

    def fast_producer():
        with tenant_scope(tenant_a):
            emit_many([event(2)])
        connection.close()

    slow = threading.Thread(target=slow_producer)
    slow.start()
    assert inserted.wait(timeout=30)
    fast = threading.Thread(target=fast_producer)
    fast.start()
    fast.join(timeout=1)
    assert fast.is_alive(), "the second producer should wait for the first to commit"
    dispatcher.drain()  # a dispatcher running meanwhile sees neither event yet
    release.set()
    slow.join(timeout=30)
    fast.join(timeout=30)
    dispatcher.drain()
    assert [e.payload["seq"] for e in stream_envelopes(topic)] == [1, 2]
