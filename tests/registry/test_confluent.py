"""The Confluent-compatible Schema Registry API, driven by an unmodified client library
(confluent-kafka's SchemaRegistryClient) against a live Steward."""

import json
from contextlib import ExitStack

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from apps.core.context import SYSTEM_ACTOR
from apps.registry import services
from apps.registry import versions as schemas
from apps.registry.catalog import install_steward_topics
from apps.registry.models import SchemaVersion, Service, Topic
from tests.factories import service_token
from tests.registry.test_schemas import V1, V2_BREAKING, V2_COMPATIBLE

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def connect(live_server):
    """A new client each call: the library caches ids, and a fresh one must ask."""

    install_steward_topics()
    issued = service_token(scopes=["registry:write"], name="orders")
    # Closed after the test: the live server's threads hold a database connection for
    # as long as a client keeps its HTTP connection alive.
    with ExitStack() as clients:

        def new_client():
            return clients.enter_context(
                SchemaRegistryClient(
                    {
                        "url": f"{live_server.url}/api/schema-registry",
                        "basic.auth.user.info": f"orders:{issued.secret}",
                    }
                )
            )

        yield new_client


@pytest.fixture
def client(connect):
    return connect()


def schema(document):
    return Schema(json.dumps(document), "JSON")


def test_register_read_and_look_up_like_a_confluent_client(client, connect):
    orders_produces()
    first = client.register_schema("orders.order-value", schema(V1))
    topic = Topic.objects.get(name="orders.order")
    assert list(topic.producers.values_list("name", flat=True)) == ["orders"]
    # idempotent, asked of the server (a new client has nothing cached)
    assert connect().register_schema("orders.order-value", schema(V1)) == first
    assert SchemaVersion.objects.count() == 1
    second = client.register_schema("orders.order-value", schema(V2_COMPATIBLE))
    assert second != first
    assert client.get_subjects() == ["orders.order-value"]
    assert client.get_versions("orders.order-value") == [1, 2]
    latest = client.get_latest_version("orders.order-value")
    assert (latest.version, latest.schema_id) == (2, second)
    assert json.loads(latest.schema.schema_str) == V2_COMPATIBLE
    by_id = client.get_schema(first)
    assert json.loads(by_id.schema_str) == V1 and by_id.schema_type == "JSON"
    found = client.lookup_schema("orders.order-value", schema(V1))
    assert (found.schema_id, found.version) == (first, 1)
    # a producer still on the older schema registers it again: told its id, no version 3
    assert connect().register_schema("orders.order-value", schema(V1)) == first
    assert client.get_versions("orders.order-value") == [1, 2]


def test_a_breaking_schema_answers_409_naming_who_must_acknowledge(client, connect):
    client.register_schema("orders.order-value", schema(V1))
    Topic.objects.get(name="orders.order").consumers.add(Service.objects.create(name="billing"))
    assert client.test_compatibility("orders.order-value", schema(V2_BREAKING)) is False
    assert client.test_compatibility("orders.order-value", schema(V2_COMPATIBLE)) is True
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("orders.order-value", schema(V2_BREAKING))
    assert refused.value.http_status_code == 409
    assert "billing" in refused.value.error_message
    waiting = SchemaVersion.objects.get(state="awaiting_acknowledgement")
    assert waiting.version == 2
    assert client.get_versions("orders.order-value") == [1]
    # once billing has acknowledged, registering it again answers its id
    schemas.acknowledge(
        actor=SYSTEM_ACTOR, version=waiting, consumer=Service.objects.get(name="billing")
    )
    assert (
        connect().register_schema("orders.order-value", schema(V2_BREAKING)) == waiting.identity_id
    )


def orders_produces(name="orders.order"):
    """orders made the topic's producer as an operator would (registering makes none)."""
    return services.topic_create(
        actor=SYSTEM_ACTOR,
        name=name,
        producers=[services.service_ensure(actor=SYSTEM_ACTOR, name="orders")],
    )


def test_config_errors_and_authentication_take_the_registrys_shapes(client, live_server):
    orders_produces()
    client.register_schema("orders.order-value", schema(V1))
    # the subject has no level of its own yet: the reference's 40408, not the default's
    with pytest.raises(SchemaRegistryError) as own:
        client.get_compatibility("orders.order-value")
    assert (own.value.http_status_code, own.value.error_code) == (404, 40408)
    assert client.get_compatibility() == "BACKWARD"
    assert client.set_compatibility("orders.order-value", "FULL") == {"compatibility": "FULL"}
    assert client.get_compatibility("orders.order-value") == "FULL"
    with pytest.raises(SchemaRegistryError) as missing:
        client.get_versions("nothing.here-value")
    assert (missing.value.http_status_code, missing.value.error_code) == (404, 40401)
    with pytest.raises(SchemaRegistryError) as invalid:
        client.register_schema("orders.order-value", Schema('{"type": 12}', "JSON"))
    assert invalid.value.error_code == 42201
    # any name the reference accepts is a subject; one with a control character is not
    assert client.register_schema("orders value!-value", schema(V1)) > 0
    with pytest.raises(SchemaRegistryError) as unnamed:
        client.register_schema("orders\x01-value", schema(V1))
    assert (unnamed.value.http_status_code, unnamed.value.error_code) == (422, 42208)
    stranger = SchemaRegistryClient(
        {
            "url": f"{live_server.url}/api/schema-registry",
            "basic.auth.user.info": "orders:stw_not-a-token",
        }
    )
    with stranger, pytest.raises(SchemaRegistryError) as refused:
        stranger.get_subjects()
    assert (refused.value.http_status_code, refused.value.error_code) == (401, 40101)
