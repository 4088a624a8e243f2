import uuid

import pytest

from apps.core.redis import get_redis
from apps.eventing.transports import stream_key
from apps.registry.models import Subscription, Topic
from tests.eventing.factories import SECRET, subscribe


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


@pytest.fixture
def webhook_secret(monkeypatch):
    """The secret `factories.webhook()` subscriptions sign with."""
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_TEST", SECRET)
    return SECRET


@pytest.fixture
def webhook_subscription(topic, monkeypatch):
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_HOOK", "s3cret")
    return subscribe(
        topic,
        "receiver",
        transport=Subscription.Transport.WEBHOOK,
        endpoint="http://127.0.0.1:9/unused",
        secret_ref="env:STEWARD_WEBHOOK_SECRET_HOOK",
    )


@pytest.fixture(autouse=True)
def _webhooks_reach_local_receivers(loopback_webhooks):
    """This directory's webhooks are delivered to receivers on loopback."""
