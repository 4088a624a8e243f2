import uuid

import pytest

from apps.core.redis import get_redis
from apps.eventing.consumers import HANDLERS, consumer_runner, ensure_subscription_groups
from apps.eventing.transports import stream_key
from apps.registry.models import Service, Subscription, Topic


@pytest.fixture
def fast_retries(settings):
    settings.STEWARD_EVENTING = {
        **settings.STEWARD_EVENTING,
        "BACKOFF_BASE_SECONDS": 0.01,
        "BACKOFF_MAX_SECONDS": 0.05,
        "MAX_ATTEMPTS": 3,
    }
    return settings.STEWARD_EVENTING


@pytest.fixture
def topic(db):
    """A topic of its own per test, so streams left in Redis never mix between tests."""
    created = Topic.objects.create(name=f"test.t{uuid.uuid4().hex[:12]}", current_schema_version=3)
    yield created
    get_redis().delete(stream_key(created.name))


def subscribe(topic, consumer_name, *, transport=Subscription.Transport.REDIS_STREAM, **extra):
    service, _ = Service.objects.get_or_create(name=consumer_name)
    subscription = Subscription.objects.create(
        consumer=service, topic=topic, transport=transport, **extra
    )
    ensure_subscription_groups([subscription])
    return subscription


def recent_events_runner(topic):
    """Steward's own `steward.recent-events` consumer, reading this test's topic."""
    subscription = subscribe(topic, "steward.recent-events")
    return consumer_runner(HANDLERS["steward.recent-events"], [subscription])


def stream_envelopes(topic):
    from apps.eventing.envelope import Envelope

    entries = get_redis().xrange(stream_key(topic.name))
    return [Envelope.from_json(fields[b"envelope"]) for _, fields in entries]
