import uuid
from contextlib import ExitStack

import httpx
import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient

from apps.core.context import SYSTEM_ACTOR
from apps.core.redis import get_redis
from apps.eventing.transports import stream_key
from apps.registry import services
from apps.registry.models import Subscription, Topic
from tests.factories import service_token


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


@pytest.fixture
def live(live_server):
    """A new client each call (the library caches ids; a fresh one must ask) and an HTTP
    client, both closed after the test: the live server's threads hold a database
    connection while a client keeps its connection alive."""
    issued = ("orders", service_token(scopes=["registry:write"], name="orders").secret)
    base = f"{live_server.url}/api/schema-registry"
    with ExitStack() as stack:

        def client():
            return stack.enter_context(
                SchemaRegistryClient({"url": base, "basic.auth.user.info": ":".join(issued)})
            )

        http = stack.enter_context(httpx.Client(base_url=base, auth=issued, timeout=30))
        yield client, http


@pytest.fixture(autouse=True)
def _webhooks_reach_local_receivers(loopback_webhooks):
    """This directory's webhooks are delivered to receivers on loopback."""
