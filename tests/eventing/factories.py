"""Subscriptions, events and dead letters for the eventing tests (and the browser's)."""

from apps.core.context import SYSTEM_ACTOR
from apps.core.outbox import NewEvent, emit_many
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import dispatcher
from apps.eventing.consumer_registry import HANDLERS
from apps.eventing.consumers import consumer_runner
from apps.eventing.effects import perform_effect
from apps.eventing.envelope import Envelope
from apps.eventing.models import DeadLetter, RecentEvent
from apps.eventing.services import dead_letter_record, ensure_subscription_groups
from apps.eventing.transports import stream_key
from apps.registry.models import Service, Subscription
from apps.registry.services import service_ensure, topic_create

# The signing secret of `webhook()` subscriptions (the `webhook_secret` fixture sets it).
SECRET = "whsec-test-3f9a"


def subscribe(topic, consumer_name, *, transport=Subscription.Transport.REDIS_STREAM, **extra):
    service, _ = Service.objects.get_or_create(name=consumer_name)
    subscription = Subscription.objects.create(
        consumer=service, topic=topic, transport=transport, **extra
    )
    ensure_subscription_groups([subscription])
    return subscription


def webhook(topic, url, name="receiver"):
    return subscribe(
        topic,
        name,
        transport=Subscription.Transport.WEBHOOK,
        endpoint=url,
        secret_ref="env:STEWARD_WEBHOOK_SECRET_TEST",
    )


def recent_events_runner(topic):
    """Steward's own `steward.recent-events` consumer, reading this test's topic."""
    subscription = subscribe(topic, "steward.recent-events")
    return consumer_runner(HANDLERS["steward.recent-events"], [subscription])


def stream_envelopes(topic):
    entries = get_redis().xrange(stream_key(topic.name))
    return [Envelope.from_json(fields[b"envelope"]) for _, fields in entries]


def write_events(tenant, topic, n, *, aggregate="a-1"):
    """n events of one aggregate, in the outbox (not dispatched yet)."""
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


def emit(tenant, topic, n):
    """n events of one aggregate, dispatched to the topic's stream."""
    envelopes = write_events(tenant, topic, n, aggregate="t-1")
    dispatcher.drain()
    return envelopes


def publish(tenant, topic, n):
    """n events of n aggregates, dispatched to the topic's stream."""
    with tenant_scope(tenant):
        emit_many(
            [
                NewEvent(
                    topic=topic.name,
                    event_type="e",
                    aggregate_type="k",
                    aggregate_id=str(i),
                    payload={},
                    tenant=tenant,
                )
                for i in range(n)
            ]
        )
    dispatcher.drain()


def pump(runner):
    """Let the runner read until its streams have nothing new."""
    client = get_redis()
    while runner.read_once(client):
        pass


def make_dead_letter(tenant, topic, subscription, n=0):
    with tenant_scope(tenant):
        [envelope] = emit_many(
            [
                NewEvent(
                    topic=topic.name,
                    event_type="e",
                    aggregate_type="k",
                    aggregate_id="1",
                    payload={"n": n},
                    tenant=tenant,
                )
            ]
        )
    dead_letter_record(subscription=subscription, envelope=envelope, error="HTTP 500", attempts=8)
    with system_scope():
        return DeadLetter.objects.get(event_id=envelope.event_id)


def add_eventing_rows(n, tenant, topic, subscription):
    """n of each row the eventing lists show: dead letters, recent events, uncertain
    effects, and topics with a producer and a subscription."""
    for i in range(n):
        dead = make_dead_letter(tenant, topic, subscription, n=i)
        with tenant_scope(tenant):
            RecentEvent.objects.create(
                event_id=dead.event_id,
                topic=topic.name,
                event_type="e",
                tenant=tenant,
                aggregate_type="k",
                aggregate_id=str(i),
                occurred_at=dead.created_at,
            )
        perform_effect(
            tenant_id=tenant.pk,
            actor="t",
            target_system="x",
            operation="y",
            external_ref=str(dead.event_id),
            call=lambda: {},
        )
        producer = service_ensure(actor=SYSTEM_ACTOR, name=f"producer-{dead.pk}")
        extra = topic_create(actor=SYSTEM_ACTOR, name=f"test.extra{dead.pk}", producers=[producer])
        subscribe(extra, f"consumer-{dead.pk}")
