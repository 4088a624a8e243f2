"""Signed webhooks against a real local HTTP server: signatures, retries, back-off, isolation."""

import base64
import hashlib
import hmac
import json
import threading

import pytest

from apps.core.outbox import NewEvent, emit_many
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import dispatcher
from apps.eventing.consumers import webhook_runner
from apps.eventing.models import DeadLetter, DeliveryCount
from apps.registry.models import Subscription
from tests.eventing.conftest import subscribe
from tests.support import LocalServer, wait_for

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "whsec-test-3f9a"


@pytest.fixture(autouse=True)
def webhook_secret(monkeypatch):
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_TEST", SECRET)


def webhook(topic, url, name="receiver"):
    return subscribe(
        topic,
        name,
        transport=Subscription.Transport.WEBHOOK,
        endpoint=url,
        secret_ref="env:STEWARD_WEBHOOK_SECRET_TEST",
    )


def emit(tenant, topic, n):
    with tenant_scope(tenant):
        envelopes = emit_many(
            [
                NewEvent(
                    topic=topic.name,
                    event_type="e",
                    aggregate_type="thing",
                    aggregate_id="t-1",
                    payload={"n": i},
                    tenant=tenant,
                )
                for i in range(n)
            ]
        )
    dispatcher.drain()
    return envelopes


def pump(runner):
    client = get_redis()
    while runner.read_once(client):
        pass


def verify(received, secret: str) -> bool:
    """The receiver's side of the documented recipe (docs/integration.md)."""
    signed = (
        received.headers["webhook-id"].encode()
        + b"."
        + received.headers["webhook-timestamp"].encode()
        + b"."
        + received.body
    )
    expected = base64.b64encode(hmac.new(secret.encode(), signed, hashlib.sha256).digest()).decode()
    return any(
        hmac.compare_digest(part.removeprefix("v1,"), expected)
        for part in received.headers["webhook-signature"].split()
    )


def test_each_envelope_is_posted_signed_and_in_order(tenant_a, topic):
    with LocalServer() as server:
        runner = webhook_runner(webhook(topic, server.url + "/hook"))
        envelopes = emit(tenant_a, topic, 3)
        pump(runner)
    assert [r.path for r in server.received] == ["/hook"] * 3
    assert [json.loads(r.body)["payload"]["n"] for r in server.received] == [0, 1, 2]
    for received, envelope in zip(server.received, envelopes, strict=True):
        assert received.headers["webhook-id"] == str(envelope.event_id)
        assert verify(received, SECRET)
        assert not verify(received, "another secret")
        assert json.loads(received.body) == envelope.to_dict()


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
    assert dead.event_id == envelope.event_id and "HTTP 500" in dead.error
    subscription.refresh_from_db()
    assert subscription.consecutive_failures == fast_retries["MAX_ATTEMPTS"]
    assert SECRET not in dead.error and SECRET not in subscription.last_error


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


def test_a_changed_endpoint_or_secret_reference_replaces_the_running_runner(topic):
    from apps.eventing.management.commands.run_consumers import Command

    subscription = webhook(topic, "http://127.0.0.1:9/a")
    before = Command._key(webhook_runner(subscription))
    subscription.endpoint = "http://127.0.0.1:9/b"
    assert Command._key(webhook_runner(subscription)) != before
