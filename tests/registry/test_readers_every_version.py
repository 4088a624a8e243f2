"""Readers consulted on every version (issue 37 §3): a version the topic's level passes is
still judged by each consumer's declared reader schema. One that a declared reader cannot
read waits for exactly that consumer's acknowledgement; one that breaks no reader is
published at once; and each consumer's news copy carries its own reader verdict,
published and awaiting alike."""

import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.eventing.models import OutboxEvent
from apps.registry import services
from apps.registry import versions as schemas
from apps.registry.catalog import install_steward_topics
from apps.registry.models import SchemaVersion, Service, Subscription, Topic
from apps.registry.news import AWAITING, PUBLISHED, news_topic
from tests.factories import service_token
from tests.registry.factories import consumer, outcome, pending
from tests.registry.test_reader_schemas import declare

pytestmark = pytest.mark.django_db

CONSUMERS = ("alpha", "bravo", "charlie")

# JSON Schema, open content models: dropping a required property is compatible under
# BACKWARD (the new schema reads the old data), but a reader that requires it cannot read
# what the new version writes.
JSON_V1 = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "total": {"type": "number"}},
    "required": ["id", "total"],
}
JSON_DROPPED = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
# described: a new version every reader below reads (a property added would not be read
# by an open reader without it, as the level's own check says of a property removed)
JSON_NOTED = {**JSON_V1, "description": "An order, with its total."}

# Avro: dropping a field is compatible under BACKWARD; a reader that needs the field and
# has no default for it cannot read what the new version writes.
AVRO_V1 = {
    "type": "record",
    "name": "Order",
    "fields": [{"name": "id", "type": "string"}, {"name": "total", "type": "long"}],
}
AVRO_DROPPED = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "string"}]}
AVRO_NOTED = {
    **AVRO_V1,
    "fields": [*AVRO_V1["fields"], {"name": "note", "type": "string", "default": ""}],
}

CASES = {
    # schema type: (topic, v1, dropped, noted)
    "JSON": ("orders.json", JSON_V1, JSON_DROPPED, JSON_NOTED),
    "AVRO": ("orders.avro", AVRO_V1, AVRO_DROPPED, AVRO_NOTED),
}


def release(kind, name, schema, consumers=CONSUMERS):
    topic = CASES[kind][0]
    producer = Service.objects.get_or_create(name="orders")[0]
    entry = {"name": topic, "consumers": list(consumers), "schema": schema, "schema_type": kind}
    answer = schemas.model_sync(actor=SYSTEM_ACTOR, service=producer, release=name, topics=[entry])
    return outcome(answer, topic)


def readers_declared(kind):
    """v1 published for alpha, bravo and charlie; alpha reads with the version that drops
    `total`, bravo with v1 (it needs `total`), charlie declares no reader."""
    topic, v1, dropped, _ = CASES[kind]
    assert release(kind, "r1", v1)["outcome"] == "published"
    assert declare("alpha", dropped, schema_type=kind, topic=topic)["outcome"] == "declared"
    assert declare("bravo", v1, schema_type=kind, topic=topic)["outcome"] == "declared"


def subscribe_all(kind):
    topic = Topic.objects.get(name=CASES[kind][0])
    for name in CONSUMERS:  # each can receive its news: a stream subscription
        services.subscription_create(
            actor=SYSTEM_ACTOR,
            consumer=consumer(name),
            topic=topic,
            transport=Subscription.Transport.REDIS_STREAM,
        )


def copies(event_type, version):
    with system_scope():
        return {
            e.payload["addressee"]: e.payload
            for e in OutboxEvent.objects.filter(
                topic__in=[news_topic(n) for n in CONSUMERS], event_type=event_type
            )
            if e.payload["version"] == version
        }


@pytest.mark.parametrize("kind", ["JSON", "AVRO"])
def test_a_version_the_level_passes_waits_for_exactly_the_consumer_whose_reader_it_breaks(kind):
    # given
    readers_declared(kind)
    # when: the producer drops `total`, which the BACKWARD level lets through
    answer = release(kind, "r2", CASES[kind][2])
    # then: it waits for bravo alone (charlie declared no reader: the level stands for it)
    assert answer["verdict"]["compatible"] is True and answer["verdict"]["breaking"] == []
    assert answer["outcome"] == "awaiting_acknowledgement"
    assert (answer["awaiting"], answer["reads_it"]) == (["bravo"], ["alpha"])
    bravo = answer["verdict"]["readers"]["bravo"]
    assert bravo["reads"] is False and bravo["declared"] is True
    assert "total" in " ".join(d["message"] + d["path"] for d in bravo["breaking"])
    assert "charlie" not in answer["verdict"]["readers"]
    version = pending()
    assert version.awaiting_consumers == ["bravo"]
    assert Topic.objects.get(name=CASES[kind][0]).current_schema_version == 1
    # bravo's acknowledgement, the only one asked for, publishes it
    done = schemas.acknowledge(actor=SYSTEM_ACTOR, version=version, consumer=consumer("bravo"))
    assert done.state == "published"
    assert Topic.objects.get(name=CASES[kind][0]).current_schema_version == 2


@pytest.mark.parametrize("kind", ["JSON", "AVRO"])
def test_a_version_the_level_passes_and_no_reader_breaks_is_published_at_once(kind):
    readers_declared(kind)
    answer = release(kind, "r2", CASES[kind][3])
    assert answer["outcome"] == "published"
    assert answer["reads_it"] == ["alpha", "bravo"]
    assert set(answer["verdict"]["readers"]) == {"alpha", "bravo"}
    assert not SchemaVersion.objects.filter(state="awaiting_acknowledgement").exists()


def test_a_reader_declared_again_that_reads_the_held_version_publishes_it():
    readers_declared("AVRO")
    release("AVRO", "r2", AVRO_DROPPED)
    # bravo's next release reads with the schema that no longer needs `total`
    answer = declare("bravo", AVRO_DROPPED, schema_type="AVRO", topic="orders.avro")
    assert answer["waiting"]["reads"] is True and answer["waiting"]["state"] == "published"


def test_a_reader_declared_that_cannot_read_a_held_version_is_awaited_too():
    readers_declared("JSON")
    release("JSON", "r2", JSON_DROPPED)
    # charlie's release now declares a reader that needs `total`
    answer = declare("charlie", JSON_V1, topic="orders.json")
    assert answer["waiting"]["reads"] is False
    assert pending().awaiting_consumers == ["bravo", "charlie"]


@pytest.mark.parametrize("kind", ["JSON", "AVRO"])
def test_each_consumers_news_copy_carries_its_reader_verdict_published_and_awaiting(kind):
    readers_declared(kind)
    subscribe_all(kind)
    # when: a version every reader reads, then one that breaks bravo's
    release(kind, "r2", CASES[kind][3])
    release(kind, "r3", CASES[kind][2])
    # then: the published one's copies, each with its addressee's verdict
    published = copies(PUBLISHED, 2)
    assert sorted(published) == list(CONSUMERS)
    assert published["alpha"]["reader"]["reads"] is True
    assert published["bravo"]["reader"]["reads"] is True
    assert published["alpha"]["reads_it"] == ["alpha", "bravo"]
    # charlie declared none: its copy says nothing is asked of it
    assert published["charlie"]["reader"] == schemas.LEVEL_PASSES
    # and the waiting one's: bravo must act, alpha reads it, charlie is not asked
    waiting = copies(AWAITING, 3)
    assert sorted(waiting) == list(CONSUMERS)
    for copy in waiting.values():
        assert copy["awaiting"] == ["bravo"]
    assert waiting["bravo"]["reader"]["reads"] is False
    assert waiting["bravo"]["reader"]["breaking"]
    assert waiting["alpha"]["reader"]["reads"] is True
    assert waiting["charlie"]["reader"] == schemas.LEVEL_PASSES
    # once bravo acknowledges, the publication's copies carry the same verdicts
    schemas.acknowledge(actor=SYSTEM_ACTOR, version=pending(), consumer=consumer("bravo"))
    published = copies(PUBLISHED, 3)
    assert published["bravo"]["reader"] == waiting["bravo"]["reader"]
    assert published["charlie"]["reader"] == schemas.LEVEL_PASSES


def test_a_topic_without_declared_readers_publishes_a_compatible_version_as_before():
    release("JSON", "r1", JSON_V1)
    answer = release("JSON", "r2", JSON_DROPPED)
    assert answer["outcome"] == "published" and "readers" not in answer["verdict"]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["JSON", "AVRO"])
def test_through_the_schema_registry_api_the_level_answers_and_the_held_version_is_refused(
    kind, live_server
):
    install_steward_topics()
    readers_declared(kind)
    topic, _, dropped, _ = CASES[kind]
    issued = service_token(scopes=["registry:write"], name="orders")
    with SchemaRegistryClient(
        {
            "url": f"{live_server.url}/api/schema-registry",
            "basic.auth.user.info": f"orders:{issued.secret}",
        }
    ) as client:
        sent = Schema(json.dumps(dropped), kind)
        # the compatibility test answers the level's verdict, as the reference registry
        assert client.test_compatibility(f"{topic}-value", sent) is True
        # registering it is held for bravo, answered as any held registration is
        with pytest.raises(SchemaRegistryError) as refused:
            client.register_schema(f"{topic}-value", sent)
    assert refused.value.http_status_code == 409
    message = refused.value.error_message
    assert "bravo" in message and "alpha" not in message and "charlie" not in message
    assert pending().awaiting_consumers == ["bravo"]
