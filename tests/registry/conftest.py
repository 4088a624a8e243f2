import uuid

import pytest

from apps.core.context import SYSTEM_ACTOR
from apps.core.redis import get_redis
from apps.eventing.transports import stream_key
from apps.registry import services
from apps.registry.models import Subscription, Topic


@pytest.fixture
def topic(db):
    """A topic of its own per test, so streams left in Redis never mix between tests."""
    created = Topic.objects.create(name=f"test.t{uuid.uuid4().hex[:12]}", current_schema_version=3)
    yield created
    get_redis().delete(stream_key(created.name))


@pytest.fixture
def webhook_subscription(topic, monkeypatch):
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_HOOK", "s3cret")
    return services.subscription_create(
        actor=SYSTEM_ACTOR,
        consumer=services.service_ensure(actor=SYSTEM_ACTOR, name="receiver"),
        topic=topic,
        transport=Subscription.Transport.WEBHOOK,
        endpoint="http://127.0.0.1:9/unused",
        secret_ref="env:STEWARD_WEBHOOK_SECRET_HOOK",
    )
