"""The Schema Registry API as a Kafka shop meets it: Kafka's subject names, the
reference registry's other endpoints and its JSON errors on every path, and the gate
that registering and config cannot get round (issue 19, part 3, finding 3). Driven by
an unmodified confluent-kafka SchemaRegistryClient against a live Steward."""

import json
from contextlib import ExitStack

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope
from apps.eventing.models import OutboxEvent
from apps.registry import services, subjects
from apps.registry import versions as schemas
from apps.registry.models import SchemaVersion, Topic
from apps.tenancy.models import AuditEvent
from tests.factories import service_token
from tests.registry.test_schemas import V1, V2_BREAKING, V2_COMPATIBLE

# --------------------------------------------------------------------------- subject names


@pytest.mark.parametrize(
    ("subject", "topic", "role"),
    [
        ("payments-value", "payments", "value"),
        ("payments-key", "payments", "key"),
        ("my_topic-value", "my_topic", "value"),
        ("Orders.Created-value", "Orders.Created", "value"),
        ("my-dashed-topic-key", "my-dashed-topic", "key"),
        ("orders.order-value", "orders.order", "value"),
        ("com.acme.Order", "com.acme.Order", "record:com.acme.Order"),
        ("payments-com.acme.Order", "payments", "record:com.acme.Order"),
        ("a" * 249 + "-value", "a" * 249, "value"),
    ],
)
def test_a_subject_names_a_topic_and_a_role_under_each_strategy(subject, topic, role):
    named = subjects.parse(subject)
    assert (named.topic, named.role) == (topic, role)
    assert named.name == subject  # nothing renamed: the subject comes back as it was


@pytest.mark.parametrize(
    ("subject", "topic"),
    [
        ("-value", "-value"),
        ("a b-value", "a_b-value"),
        ("payments/x-value", "payments_x-value"),
        (":.ctx:orders-value", "_.ctx_orders-value"),
    ],
)
def test_a_name_outside_the_strategies_is_a_subject_of_its_own(subject, topic):
    named = subjects.parse(subject)
    assert (named.topic, named.role) == (topic, f"subject:{subject}")
    assert named.name == subject


@pytest.mark.parametrize("subject", ["", "x\x00-key", "a\x1fb", "a\x7f", "a" * 250])
def test_an_empty_name_or_one_with_a_control_character_is_no_subject(subject):
    with pytest.raises(subjects.InvalidSubject):
        subjects.parse(subject)


# --------------------------------------------------------------------------- live server

pytestmark_db = pytest.mark.django_db(transaction=True)


@pytest.fixture
def live(live_server):
    issued = ("orders", service_token(scopes=["registry:write"], name="orders").secret)
    other = ("intruder", service_token(scopes=["registry:write"], name="intruder").secret)
    base = f"{live_server.url}/api/schema-registry"
    with ExitStack() as stack:

        def client(account=issued):
            return stack.enter_context(
                SchemaRegistryClient({"url": base, "basic.auth.user.info": ":".join(account)})
            )

        http = stack.enter_context(httpx.Client(base_url=base, auth=issued, timeout=30))
        yield client, http, other


def schema(document):
    return Schema(json.dumps(document), "JSON")


def produces(name, service="orders"):
    return services.topic_create(
        actor=SYSTEM_ACTOR,
        name=name,
        producers=[services.service_ensure(actor=SYSTEM_ACTOR, name=service)],
    )


@pytestmark_db
def test_kafka_topic_names_register_under_all_three_strategies(live):
    new_client, http, _ = live
    client = new_client()
    names = [
        "payments-value",
        "payments-key",
        "my_topic-value",
        "Orders.Created-value",
        "com.acme.Order",
        "payments-com.acme.Order",
        "orders.order-value",
    ]
    ids = {name: client.register_schema(name, schema(V1)) for name in names}
    # one version per subject, all of the same schema: one schema id, as the reference
    assert len(set(ids.values())) == 1
    assert new_client().get_subjects() == sorted(names)
    # the topics keep Kafka's names; key, value and records each have their own history
    assert set(Topic.objects.values_list("name", flat=True)) >= {
        "payments",
        "my_topic",
        "Orders.Created",
        "com.acme.Order",
        "orders.order",
    }
    roles = SchemaVersion.objects.filter(topic__name="payments").values_list("role", "version")
    assert sorted(roles) == [("key", 1), ("record:com.acme.Order", 1), ("value", 1)]
    client.register_schema("payments-key", schema(V2_COMPATIBLE))
    assert new_client().get_versions("payments-key") == [1, 2]
    assert new_client().get_versions("payments-value") == [1]
    # only the payload's versions number the topic's events
    assert Topic.objects.get(name="payments").current_schema_version == 1
    latest = new_client().get_latest_version("payments-com.acme.Order")
    assert (latest.subject, latest.version) == ("payments-com.acme.Order", 1)
    # registering made no one a producer of the topics it created
    assert not Topic.objects.get(name="payments").producers.exists()


@pytestmark_db
def test_the_reference_registrys_other_endpoints(live):
    new_client, http, _ = live
    client = new_client()
    first = client.register_schema("payments-value", schema(V1))
    second = client.register_schema("payments-value", schema(V2_COMPATIBLE))
    assert client.get_schema_types() == ["AVRO", "JSON", "PROTOBUF"]
    assert client.get_global_mode() == "READWRITE"
    in_force = http.get("/mode/payments-value", params={"defaultToGlobal": "true"})
    assert in_force.json() == {"mode": "READWRITE"}
    assert client.get_contexts() == ["."]
    assert client.get_subjects_by_schema_id(first) == ["payments-value"]
    [found] = client.get_schema_versions(second)
    assert (found.subject, found.version) == ("payments-value", 2)
    assert client.get_referenced_by("payments-value", 1) == []
    assert client.get_subjects(deleted=True) == ["payments-value"]
    assert http.get(f"/schemas/ids/{first}/schema").json() == V1
    assert http.get("/subjects/payments-value/versions/2/schema").json() == V2_COMPATIBLE
    listed = http.get("/schemas").json()
    assert [(s["subject"], s["version"], s["id"]) for s in listed] == [
        ("payments-value", 1, first),
        ("payments-value", 2, second),
    ]
    assert http.get("/schemas", params={"subjectPrefix": "nothing"}).json() == []
    normalized = http.post(
        "/subjects/payments-value/versions",
        params={"normalize": "true"},
        json={"schema": json.dumps(V2_COMPATIBLE, indent=2), "schemaType": "JSON"},
    )
    assert (normalized.status_code, normalized.json()["id"]) == (200, second)
    looked_up = http.post(
        "/subjects/payments-value", json={"schema": json.dumps(V1), "schemaType": "JSON"}
    ).json()
    assert (looked_up["id"], looked_up["version"]) == (first, 1)


@pytestmark_db
@pytest.mark.parametrize(
    ("method", "path", "status", "code"),
    [
        ("GET", "/no/such/path", 404, 404),
        ("GET", "/subjects/payments-value/versions/1/nothing", 404, 404),
        ("POST", "/schemas/ids/1/unknown", 404, 404),
        ("GET", "/schemas/ids/999999", 404, 40403),
        ("GET", "/schemas/ids/999999/subjects", 404, 40403),
        ("GET", "/subjects/nothing-value/versions", 404, 40401),
        ("GET", "/subjects/payments-value/versions/7", 404, 40402),
        ("GET", "/subjects/payments-value/versions/seven", 422, 42202),
        ("GET", "/subjects/payments-value/versions/0", 422, 42202),
        ("GET", "/subjects/payments-value/versions/1/referencedby", 200, None),
        ("GET", "/subjects/a%20b-value/versions", 404, 40401),
        ("DELETE", "/contexts", 405, 405),
    ],
)
def test_every_path_answers_the_registrys_json(live, method, path, status, code):
    new_client, http, _ = live
    new_client().register_schema("payments-value", schema(V1))
    answer = http.request(method, path)
    assert answer.status_code == status
    assert answer.headers["content-type"].startswith("application/")
    assert "html" not in answer.headers["content-type"]
    if code is not None:
        assert answer.json()["error_code"] == code


@pytestmark_db
def test_an_unknown_schema_type_is_answered_42201_naming_what_is_supported(live):
    new_client, http, _ = live
    answer = http.post(
        "/subjects/payments-value/versions",
        json={"schema": "<xs:schema/>", "schemaType": "XSD"},
    )
    assert (answer.status_code, answer.json()["error_code"]) == (422, 42201)
    assert "AVRO, JSON, PROTOBUF" in answer.json()["message"]


# --------------------------------------------------------------------------- the gate (#19)


def audit_actions(action):
    with system_scope():
        return list(AuditEvent.objects.filter(action=action).values_list("changes", flat=True))


def lowered_events():
    with system_scope():
        return list(
            OutboxEvent.objects.filter(event_type="TopicCompatibilityLowered").values_list(
                "payload", flat=True
            )
        )


@pytestmark_db
def test_only_producers_and_operators_change_a_topics_level(live):
    new_client, http, intruder = live
    produces("orders.order")
    new_client().register_schema("orders.order-value", schema(V1))
    outsider = new_client(intruder)
    with pytest.raises(SchemaRegistryError) as refused:
        outsider.set_compatibility("orders.order-value", "NONE")
    assert (refused.value.http_status_code, refused.value.error_code) == (403, 40301)
    assert Topic.objects.get(name="orders.order").compatibility_mode == ""
    # nor may the outsider register on a topic that has producers
    with pytest.raises(SchemaRegistryError) as not_producer:
        outsider.register_schema("orders.order-value", schema(V2_COMPATIBLE))
    assert (not_producer.value.http_status_code, not_producer.value.error_code) == (403, 40301)
    # registering on a topic with no producer yet never makes the caller one
    outsider.register_schema("loose.topic-value", schema(V1))
    assert not Topic.objects.get(name="loose.topic").producers.exists()
    with pytest.raises(SchemaRegistryError):
        outsider.set_compatibility("loose.topic-value", "NONE")
    # the producer may
    assert new_client().set_compatibility("orders.order-value", "FULL") == {"compatibility": "FULL"}


@pytestmark_db
def test_the_gate_bypass_through_config_is_closed(live):
    """Issue 19 part 3 finding 3: NONE, then a breaking version, must neither publish past
    nor supersede the version waiting for acknowledgement."""
    new_client, http, _ = live
    produces("orders.order")
    client = new_client()
    client.register_schema("orders.order-value", schema(V1))
    topic = Topic.objects.get(name="orders.order")
    topic.consumers.add(services.service_ensure(actor=SYSTEM_ACTOR, name="billing"))
    with pytest.raises(SchemaRegistryError) as waits:
        client.register_schema("orders.order-value", schema(V2_BREAKING))
    assert waits.value.http_status_code == 409
    waiting = SchemaVersion.objects.get(state="awaiting_acknowledgement")
    # lowering: allowed to the producer, audited and announced to the consumers
    assert client.set_compatibility("orders.order-value", "NONE") == {"compatibility": "NONE"}
    [changes] = audit_actions("topic.compatibility_lowered")
    assert changes["compatibility_mode"] == ["BACKWARD", "NONE"]
    [event] = lowered_events()
    assert (event["topic"], event["from"], event["to"]) == ("orders.order", "BACKWARD", "NONE")
    assert event["consumers"] == ["billing"]
    # a breaking version now: refused, the waiting one untouched, nothing published
    other_breaking = {**V1, "properties": {"id": {"type": "integer"}}}
    with pytest.raises(SchemaRegistryError) as refused:
        new_client().register_schema("orders.order-value", schema(other_breaking))
    assert refused.value.http_status_code == 409
    assert "waits for acknowledgement" in refused.value.error_message
    waiting.refresh_from_db()
    assert waiting.state == "awaiting_acknowledgement"
    assert list(SchemaVersion.objects.values_list("version", "state").order_by("version")) == [
        (1, "published"),
        (2, "awaiting_acknowledgement"),
    ]
    assert new_client().get_versions("orders.order-value") == [1]
    # once the waiting version is withdrawn, the lowered level applies
    schemas.withdraw_version(actor=SYSTEM_ACTOR, version=waiting)
    assert new_client().register_schema("orders.order-value", schema(other_breaking)) > 0
    # raising the level again is audited as an ordinary change, and not announced
    client.set_compatibility("orders.order-value", "BACKWARD")
    assert len(lowered_events()) == 1
    assert audit_actions("topic.compatibility")[-1]["compatibility_mode"] == ["NONE", "BACKWARD"]


@pytestmark_db
def test_lowering_a_topic_without_consumers_is_not_announced(live):
    new_client, http, _ = live
    produces("orders.order")
    client = new_client()
    client.register_schema("orders.order-value", schema(V1))
    client.set_compatibility("orders.order-value", "NONE")
    assert lowered_events() == []


@pytest.mark.parametrize(
    ("mode", "other", "implies"),
    [
        ("FULL", "BACKWARD", True),
        ("BACKWARD", "FULL", False),
        ("BACKWARD_TRANSITIVE", "BACKWARD", True),
        ("BACKWARD", "BACKWARD_TRANSITIVE", False),
        ("FORWARD", "BACKWARD", False),
        ("NONE", "BACKWARD", False),
        ("BACKWARD", "NONE", True),
        ("FULL_TRANSITIVE", "FORWARD_TRANSITIVE", True),
    ],
)
def test_which_level_lowers_which(mode, other, implies):
    assert schemas.mode_implies(mode, other) is implies


# --------------------------------------------------------------------------- Avro

AVRO_V1 = {
    "type": "record",
    "name": "Payment",
    "namespace": "com.acme",
    "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "long"}],
}
# compatible: a field added with a default
AVRO_V2 = {
    **AVRO_V1,
    "fields": [*AVRO_V1["fields"], {"name": "note", "type": "string", "default": ""}],
}
# breaking: a field added without a default
AVRO_BREAKING = {**AVRO_V1, "fields": [*AVRO_V1["fields"], {"name": "currency", "type": "string"}]}


def avro(document, **dumps):
    return Schema(json.dumps(document, **dumps), "AVRO")


@pytestmark_db
def test_avro_registers_serializes_and_is_fetched_by_id(live):
    from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    new_client, http, _ = live
    client = new_client()
    first = client.register_schema("payments-value", avro(AVRO_V1))
    # the same schema with other formatting and attribute order is the same schema
    reordered = {"fields": AVRO_V1["fields"], "name": "com.acme.Payment", "type": "record"}
    assert new_client().register_schema("payments-value", avro(reordered, indent=4)) == first
    assert new_client().get_schema(first).schema_type == "AVRO"
    found = new_client().lookup_schema("payments-value", avro(reordered))
    assert (found.schema_id, found.version) == (first, 1)
    assert client.test_compatibility("payments-value", avro(AVRO_V2)) is True
    assert client.test_compatibility("payments-value", avro(AVRO_BREAKING)) is False
    second = client.register_schema("payments-value", avro(AVRO_V2))
    assert new_client().get_versions("payments-value") == [1, 2]
    # an unmodified serializer and deserializer, through the registry
    serializer = AvroSerializer(
        new_client(),
        json.dumps(AVRO_V2),
        conf={"auto.register.schemas": False, "use.latest.version": True},
    )
    context = SerializationContext("payments", MessageField.VALUE)
    data = serializer({"id": "p1", "amount": 12, "note": "n"}, context)
    assert int.from_bytes(data[1:5], "big") == second
    deserializer = AvroDeserializer(new_client())
    assert deserializer(data, context) == {"id": "p1", "amount": 12, "note": "n"}
    assert http.get("/schemas/types").json() == ["AVRO", "JSON", "PROTOBUF"]


@pytestmark_db
def test_a_breaking_avro_version_waits_for_its_consumers(live):
    new_client, http, _ = live
    client = new_client()
    client.register_schema("payments-value", avro(AVRO_V1))
    Topic.objects.get(name="payments").consumers.add(
        services.service_ensure(actor=SYSTEM_ACTOR, name="ledger")
    )
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("payments-value", avro(AVRO_BREAKING))
    assert refused.value.http_status_code == 409
    assert "ledger" in refused.value.error_message
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in refused.value.error_message
    waiting = SchemaVersion.objects.get(state="awaiting_acknowledgement")
    assert (waiting.schema_type, waiting.version) == ("AVRO", 2)
    verbose = http.post(
        "/compatibility/subjects/payments-value/versions/latest",
        params={"verbose": "true"},
        json={"schema": json.dumps(AVRO_BREAKING), "schemaType": "AVRO"},
    ).json()
    assert verbose["is_compatible"] is False and verbose["messages"]


@pytestmark_db
def test_invalid_avro_is_42201_and_a_changed_type_is_incompatible_40901(live):
    new_client, http, _ = live
    client = new_client()
    bad = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "nothing"}]}
    with pytest.raises(SchemaRegistryError) as invalid:
        client.register_schema("payments-value", avro(bad))
    assert (invalid.value.http_status_code, invalid.value.error_code) == (422, 42201)
    client.register_schema("payments-value", avro(AVRO_V1))
    # another type is judged as the reference judges it: incompatible under the level
    with pytest.raises(SchemaRegistryError) as changed:
        client.register_schema("payments-value", schema(V1))
    assert (changed.value.http_status_code, changed.value.error_code) == (409, 40901)
    assert "different schema type" in changed.value.error_message
    # no schemaType is Avro, as the reference registry reads it
    answer = http.post("/subjects/payments-value/versions", json={"schema": json.dumps(AVRO_V1)})
    assert answer.status_code == 200


# --------------------------------------------------------------------------- deleting

V3 = {**V2_COMPATIBLE, "properties": {**V2_COMPATIBLE["properties"], "x": {"type": "string"}}}


@pytestmark_db
def test_soft_then_hard_delete_of_versions_and_subjects_as_the_reference_rules(live):
    new_client, http, _ = live
    client = new_client()
    first = client.register_schema("payments-value", schema(V1))
    client.register_schema("payments-value", schema(V2_COMPATIBLE))
    client.register_schema("payments-value", schema(V3))
    # hard before soft is refused
    with pytest.raises(SchemaRegistryError) as not_first:
        client.delete_version("payments-value", 1, permanent=True)
    assert (not_first.value.http_status_code, not_first.value.error_code) == (404, 40407)
    assert client.delete_version("payments-value", 1) == 1
    assert new_client().get_versions("payments-value") == [2, 3]
    assert http.get("/subjects/payments-value/versions", params={"deleted": "true"}).json() == [
        1,
        2,
        3,
    ]
    # still served by id: data written with it stays readable
    assert json.loads(new_client().get_schema(first).schema_str) == V1
    with pytest.raises(SchemaRegistryError) as again:
        client.delete_version("payments-value", 1)
    assert again.value.error_code == 40406
    assert client.delete_version("payments-value", 1, permanent=True) == 1
    assert http.get(f"/schemas/ids/{first}").json()["error_code"] == 40403
    # the subject: soft, then hard
    with pytest.raises(SchemaRegistryError) as subject_first:
        client.delete_subject("payments-value", permanent=True)
    assert subject_first.value.error_code == 40405
    assert client.delete_subject("payments-value") == [2, 3]
    assert new_client().get_subjects() == []
    assert new_client().get_subjects(deleted=True) == ["payments-value"]
    with pytest.raises(SchemaRegistryError) as soft_again:
        client.delete_subject("payments-value")
    assert soft_again.value.error_code == 40404
    assert client.delete_subject("payments-value", permanent=True) == [2, 3]
    assert new_client().get_subjects(deleted=True) == []
    assert not SchemaVersion.objects.filter(topic__name="payments").exists()
    # every deletion audited
    assert len(audit_actions("schema_version.delete")) == 3
    assert len(audit_actions("schema_version.delete_permanently")) == 3


@pytestmark_db
def test_a_version_its_consumers_read_is_protected(live):
    new_client, http, intruder = live
    produces("orders.order")
    client = new_client()
    client.register_schema("orders.order-value", schema(V1))
    client.register_schema("orders.order-value", schema(V2_COMPATIBLE))
    Topic.objects.get(name="orders.order").consumers.add(
        services.service_ensure(actor=SYSTEM_ACTOR, name="billing")
    )
    with pytest.raises(SchemaRegistryError) as read:
        client.delete_version("orders.order-value", 2)
    assert (read.value.http_status_code, read.value.error_code) == (422, 42206)
    assert "billing" in read.value.error_message
    with pytest.raises(SchemaRegistryError) as subject_read:
        client.delete_subject("orders.order-value")
    assert subject_read.value.error_code == 42206
    # an older version no one reads any more may go; only its producers may delete it
    with pytest.raises(SchemaRegistryError) as outsider:
        new_client(intruder).delete_version("orders.order-value", 1)
    assert outsider.value.error_code == 40301
    assert client.delete_version("orders.order-value", 1) == 1
    assert Topic.objects.get(name="orders.order").current_schema_version == 2


@pytestmark_db
def test_a_deleted_version_leaves_the_checks_and_config_delete_reverts(live):
    new_client, http, _ = live
    produces("orders.order")
    client = new_client()
    client.register_schema("orders.order-value", schema(V1))
    client.register_schema("orders.order-value", schema(V2_COMPATIBLE))
    client.delete_version("orders.order-value", 2)
    assert Topic.objects.get(name="orders.order").current_schema_version == 1
    # the same schema again is a new version, checked against the live ones only
    client.register_schema("orders.order-value", schema(V2_COMPATIBLE))
    assert new_client().get_versions("orders.order-value") == [1, 3]
    own = http.get("/config/orders.order-value", params={"defaultToGlobal": "false"})
    assert (own.status_code, own.json()["error_code"]) == (404, 40408)
    client.set_compatibility("orders.order-value", "FULL")
    assert http.delete("/config/orders.order-value").json() == {"compatibilityLevel": "FULL"}
    in_force = http.get("/config/orders.order-value", params={"defaultToGlobal": "true"})
    assert in_force.json() == {"compatibilityLevel": "BACKWARD"}


# --------------------------------------------------------------------------- modes, config


@pytestmark_db
def test_read_only_modes_refuse_writes(live):
    new_client, http, _ = live
    produces("orders.order")
    client = new_client()
    client.register_schema("orders.order-value", schema(V1))
    assert client.update_mode("orders.order-value", "READONLY") == "READONLY"
    assert client.get_mode("orders.order-value") == "READONLY"
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("orders.order-value", schema(V2_COMPATIBLE))
    assert (refused.value.http_status_code, refused.value.error_code) == (422, 42205)
    with pytest.raises(SchemaRegistryError) as no_delete:
        client.delete_version("orders.order-value", 1)
    assert no_delete.value.error_code == 42205
    invalid = http.put("/mode/orders.order-value", json={"mode": "SOMETIMES"})
    assert (invalid.status_code, invalid.json()["error_code"]) == (422, 42204)
    assert http.delete("/mode/orders.order-value").json() == {"mode": "READONLY"}
    assert client.register_schema("orders.order-value", schema(V2_COMPATIBLE)) > 0
    # an id is given only in import mode
    given = http.post(
        "/subjects/orders.order-value/versions",
        json={"schema": json.dumps(V3), "schemaType": "JSON", "id": 5000, "version": 9},
    )
    assert (given.status_code, given.json()["error_code"]) == (422, 42205)
    # registry-wide settings are operators' only
    with pytest.raises(SchemaRegistryError) as not_operator:
        client.update_global_mode("READONLY")
    assert not_operator.value.error_code == 40301
    assert http.put("/config", json={"compatibility": "NONE"}).json()["error_code"] == 40301


@pytestmark_db
def test_import_mode_registers_with_the_ids_and_versions_a_migration_brings(live, operator):
    new_client, http, _ = live
    topic = produces("legacy.orders")
    schemas.set_registry_mode(actor=SYSTEM_ACTOR, topic=topic, role="value", mode="IMPORT")
    for number, (schema_id, document) in enumerate([(7001, V1), (7005, V2_BREAKING)], 1):
        answer = http.post(
            "/subjects/legacy.orders-value/versions",
            json={
                "schema": json.dumps(document),
                "schemaType": "JSON",
                "id": schema_id,
                "version": number,
            },
        )
        assert answer.status_code == 200, answer.text
        assert (answer.json()["id"], answer.json()["version"]) == (schema_id, number)
    # the same import again is the same answer; an id taken by another schema is 42205,
    # worded as the reference words it
    again = http.post(
        "/subjects/legacy.orders-value/versions",
        json={"schema": json.dumps(V1), "schemaType": "JSON", "id": 7001, "version": 1},
    )
    assert again.json()["id"] == 7001
    clash = http.post(
        "/subjects/legacy.orders-value/versions",
        json={"schema": json.dumps(V3), "schemaType": "JSON", "id": 7001, "version": 3},
    )
    assert (clash.status_code, clash.json()["error_code"]) == (422, 42205)
    assert clash.json()["message"] == "Overwrite new schema with id 7001 is not permitted."
    # imported history needs no acknowledgement: it is already in use
    assert new_client().get_versions("legacy.orders-value") == [1, 2]
    assert json.loads(new_client().get_schema(7005).schema_str) == V2_BREAKING
    assert Topic.objects.get(name="legacy.orders").current_schema_version == 2
    assert len(audit_actions("schema_version.import")) == 2
    # back to READWRITE, new ids come after the imported ones
    schemas.set_registry_mode(actor=SYSTEM_ACTOR, topic=topic, role="value", mode="")
    assert new_client().register_schema("legacy.orders-value", schema(V2_BREAKING)) == 7005
    # the imported schema registered elsewhere keeps its imported id
    assert new_client().register_schema("fresh.topic-value", schema(V1)) == 7001
    assert new_client().register_schema("fresh.topic-key", schema(V3)) > 7005
    # IMPORT on a subject that has versions needs force
    with pytest.raises(schemas.RegistryRefused):
        schemas.set_registry_mode(actor=SYSTEM_ACTOR, topic=topic, role="value", mode="IMPORT")


@pytestmark_db
def test_the_registry_default_level_is_operators_and_lowering_it_is_announced(live, operator):
    from apps.core.context import Actor

    new_client, http, _ = live
    produces("orders.order")
    new_client().register_schema("orders.order-value", schema(V1))
    Topic.objects.get(name="orders.order").consumers.add(
        services.service_ensure(actor=SYSTEM_ACTOR, name="billing")
    )
    person = Actor(user=operator)
    schemas.set_registry_default(actor=person, key="compatibility", value="NONE")
    assert new_client().get_compatibility() == "NONE"
    in_force = http.get("/config/orders.order-value", params={"defaultToGlobal": "true"})
    assert in_force.json() == {"compatibilityLevel": "NONE"}
    [event] = lowered_events()
    assert (event["topic"], event["from"], event["to"]) == ("orders.order", "BACKWARD", "NONE")
    schemas.set_registry_default(actor=person, key="compatibility", value=None)
    assert new_client().get_compatibility() == "BACKWARD"
    assert len(lowered_events()) == 1
