"""Schemas, releases and look-ups shared by the registry's tests (and the browser's)."""

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.eventing.models import OutboxEvent
from apps.registry import services
from apps.registry import versions as schemas
from apps.registry.models import SchemaVersion, Service, Subscription, Topic

V1 = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "total": {"type": "number"}},
    "required": ["id"],
    "additionalProperties": False,
}
# compatible under BACKWARD/STRICT: an optional property added to a closed model
V2_COMPATIBLE = {**V1, "properties": {**V1["properties"], "note": {"type": "string"}}}
# breaking: a required property without a default
V2_BREAKING = {**V1, "required": ["id", "total"]}


def sync(release, schema, *, consumers=("billing", "ledger"), name="orders.order", extra=()):
    producer = Service.objects.get_or_create(name="orders")[0]
    topics = [{"name": name, "consumers": list(consumers), "schema": schema}, *extra]
    return schemas.model_sync(actor=SYSTEM_ACTOR, service=producer, release=release, topics=topics)


def outcome(answer, name="orders.order"):
    return next(t for t in answer["topics"] if t["topic"] == name)


def events(event_type):
    with system_scope():
        return list(
            OutboxEvent.objects.filter(topic="registry.schema", event_type=event_type)
            .order_by("id")
            .values_list("payload", flat=True)
        )


def pending():
    return SchemaVersion.objects.get(state="awaiting_acknowledgement")


def consumer(name):
    return Service.objects.get(name=name)


def waiting_version():
    """orders.order v1 published and v2, breaking, waiting on billing and ledger."""
    sync("r1", V1)
    sync("r2", V2_BREAKING)
    return pending()


def add_catalog_rows(n):
    """n topics, each with a producer, a consumer and its subscription."""
    for _ in range(n):
        number = Topic.objects.count()
        producer = services.service_ensure(actor=SYSTEM_ACTOR, name=f"producer-{number}")
        reader = services.service_ensure(actor=SYSTEM_ACTOR, name=f"reader-{number}")
        topic = services.topic_create(
            actor=SYSTEM_ACTOR, name=f"test.listed{number}", producers=[producer]
        )
        topic.consumers.add(reader)
        services.subscription_create(
            actor=SYSTEM_ACTOR,
            consumer=reader,
            topic=topic,
            transport=Subscription.Transport.REDIS_STREAM,
        )


def add_versions(n):
    """n topics with a published version and a breaking one waiting, billing's
    acknowledgement in and ledger's not."""
    for _ in range(n):
        name = f"orders.listed{Topic.objects.count()}"
        sync(f"{name}-1", V1, name=name)
        sync(f"{name}-2", V2_BREAKING, name=name)
        waiting = SchemaVersion.objects.get(topic__name=name, state="awaiting_acknowledgement")
        schemas.acknowledge(actor=SYSTEM_ACTOR, version=waiting, consumer=consumer("billing"))
