"""Schema references through the Schema Registry API (issue 18): a schema names another
subject's version in `references` and uses it (a JSON Schema `$ref`, an Avro type's full
name); the registry resolves it from what it stores, lists it in `referencedby`, and keeps
it from being deleted. Driven over HTTP and by an unmodified confluent-kafka
SchemaRegistryClient against a live Steward."""

import json

import httpx
import pytest
from confluent_kafka.schema_registry import Schema, SchemaReference
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from apps.core.context import SYSTEM_ACTOR
from apps.registry import services
from apps.registry.formats import avro
from apps.registry.formats import json_schema as compatibility
from apps.registry.models import SchemaReference as StoredReference
from apps.registry.models import SchemaVersion
from tests.factories import service_token

pytestmark = pytest.mark.django_db(transaction=True)

ADDRESS = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "properties": {"street": {"type": "string"}, "zip": {"$ref": "#/definitions/zip"}},
    "definitions": {"zip": {"type": "string", "maxLength": 5}},
}
# a bound raised: a compatible change inside the referenced type
ADDRESS_LONGER_ZIP = {**ADDRESS, "definitions": {"zip": {"type": "string", "maxLength": 10}}}
# a type changed: a breaking one
ADDRESS_NUMERIC_ZIP = {**ADDRESS, "definitions": {"zip": {"type": "integer"}}}
ORDER = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "ship_to": {"$ref": "address.json"},
        "zip": {"$ref": "address.json#/properties/zip"},
    },
}
AVRO_ADDRESS = {
    "type": "record",
    "name": "Address",
    "namespace": "com.acme",
    "fields": [{"name": "street", "type": "string"}],
}
AVRO_ORDER = {
    "type": "record",
    "name": "Order",
    "namespace": "com.acme",
    "fields": [
        {"name": "id", "type": "string"},
        {"name": "ship_to", "type": "com.acme.Address"},
        {"name": "bill_to", "type": ["null", "com.acme.Address"], "default": None},
    ],
}


def json_schema(document, references=()):
    return Schema(json.dumps(document), "JSON", references=list(references))


def address_ref(version=1):
    return SchemaReference("address.json", "address-value", version)


def addresses(client, *documents):
    """Versions 1, 2 … of address-value, a topic the test's service produces, at level
    NONE: each is whatever the test needs the referenced type to become."""
    produced_by_orders("address")
    client.register_schema("address-value", json_schema(documents[0]))
    client.set_compatibility("address-value", "NONE")
    for document in documents[1:]:
        client.register_schema("address-value", json_schema(document))


def produced_by_orders(name):
    """A topic the test's service produces, so it may set the topic's level."""
    services.topic_create(
        actor=SYSTEM_ACTOR,
        name=name,
        producers=[services.service_ensure(actor=SYSTEM_ACTOR, name="orders")],
    )


def test_a_schema_registers_with_references_and_is_served_with_them(live):
    new_client, http = live
    client = new_client()
    address_id = client.register_schema("address-value", json_schema(ADDRESS))
    order_id = client.register_schema("orders-value", json_schema(ORDER, [address_ref()]))
    # stored with the version, pointing at the referenced version
    stored = StoredReference.objects.get(version__identity_id=order_id)
    assert (stored.name, stored.referenced.identity_id) == ("address.json", address_id)

    latest = new_client().get_latest_version("orders-value")
    assert latest.schema_id == order_id
    assert json.loads(latest.schema.schema_str) == ORDER  # as registered, $refs by name
    assert [(r.name, r.subject, r.version) for r in latest.schema.references] == [
        ("address.json", "address-value", 1)
    ]
    by_id = http.get(f"/schemas/ids/{order_id}").json()
    assert by_id["references"] == [
        {"name": "address.json", "subject": "address-value", "version": 1}
    ]
    assert json.loads(by_id["schema"]) == ORDER
    assert http.get("/subjects/orders-value/versions/1/schema").json() == ORDER
    # a schema without references has no references member, as the reference answers it
    assert "references" not in http.get(f"/schemas/ids/{address_id}").json()
    assert "references" not in http.get("/subjects/address-value/versions/1").json()
    listed = {s["subject"]: s for s in http.get("/schemas").json()}
    assert listed["orders-value"]["references"][0]["subject"] == "address-value"


def test_the_client_serializes_and_reads_back_through_a_referenced_schema(live):
    new_client, _ = live
    client = new_client()
    client.register_schema("address-value", json_schema(ADDRESS))
    order = json_schema(ORDER, [address_ref()])
    order_id = client.register_schema("orders-value", order)
    context = SerializationContext("orders", MessageField.VALUE)
    conf = {"auto.register.schemas": False, "use.latest.version": True}
    serializer = JSONSerializer(order, new_client(), conf=conf)
    record = {"id": "o-1", "ship_to": {"street": "Main St", "zip": "12345"}, "zip": "12345"}
    data = serializer(record, context)
    assert int.from_bytes(data[1:5], "big") == order_id
    assert JSONDeserializer(None, schema_registry_client=new_client())(data, context) == record
    # the referenced type is what the client validates with: its zip is at most 5 long
    with pytest.raises(Exception, match="too long"):
        serializer({**record, "ship_to": {"zip": "1234567"}}, context)


def test_the_same_schema_with_the_same_references_is_the_same_version(live):
    new_client, _ = live
    client = new_client()
    addresses(client, ADDRESS)
    first = client.register_schema("orders-value", json_schema(ORDER, [address_ref()]))
    again = new_client().register_schema("orders-value", json_schema(ORDER, [address_ref()]))
    assert again == first
    assert SchemaVersion.objects.filter(topic__name="orders").count() == 1
    # other references make another schema, though the text is the same
    client.register_schema("address-value", json_schema(ADDRESS_LONGER_ZIP))
    other = new_client().register_schema("orders-value", json_schema(ORDER, [address_ref(2)]))
    assert other != first
    assert new_client().get_versions("orders-value") == [1, 2]
    assert StoredReference.objects.get(version__identity_id=other).referenced.version == 2


def test_lookup_finds_a_schema_by_its_text_and_its_references(live):
    new_client, http = live
    client = new_client()
    client.register_schema("address-value", json_schema(ADDRESS))
    order_id = client.register_schema("orders-value", json_schema(ORDER, [address_ref()]))
    found = new_client().lookup_schema("orders-value", json_schema(ORDER, [address_ref()]))
    assert (found.schema_id, found.version) == (order_id, 1)
    assert [r.name for r in found.schema.references] == ["address.json"]
    # the same text without its references is not that schema (nor a valid one)
    body = {"schema": json.dumps(ORDER), "schemaType": "JSON"}
    assert http.post("/subjects/orders-value", json=body).json()["error_code"] == 42201


def test_referencedby_lists_the_ids_of_the_schemas_that_reference_a_version(live):
    new_client, http = live
    client = new_client()
    client.register_schema("address-value", json_schema(ADDRESS))
    assert http.get("/subjects/address-value/versions/1/referencedby").json() == []
    order_id = client.register_schema("orders-value", json_schema(ORDER, [address_ref()]))
    invoice = {**ORDER, "title": "invoice"}  # another schema: another id
    invoice_id = client.register_schema("invoices-value", json_schema(invoice, [address_ref()]))
    answer = http.get("/subjects/address-value/versions/1/referencedby")
    assert answer.status_code == 200
    assert answer.json() == sorted([order_id, invoice_id])
    assert http.get("/subjects/address-value/versions/latest/referencedby").json() == sorted(
        [order_id, invoice_id]
    )


def test_a_change_inside_the_referenced_type_is_judged_through_the_referencing_schema(live):
    new_client, http = live
    client = new_client()
    addresses(client, ADDRESS, ADDRESS_LONGER_ZIP, ADDRESS_NUMERIC_ZIP)
    client.register_schema("orders-value", json_schema(ORDER, [address_ref(1)]))
    # the referencing schema's text is the same each time: only the referenced type moves
    assert client.test_compatibility("orders-value", json_schema(ORDER, [address_ref(2)]))
    assert not client.test_compatibility("orders-value", json_schema(ORDER, [address_ref(3)]))
    verbose = http.post(
        "/compatibility/subjects/orders-value/versions/latest?verbose=true",
        json={
            "schema": json.dumps(ORDER),
            "schemaType": "JSON",
            "references": [{"name": "address.json", "subject": "address-value", "version": 3}],
        },
    ).json()
    assert verbose["is_compatible"] is False
    assert any(
        m.startswith("TYPE_CHANGED at #/properties/ship_to/properties/zip")
        for m in verbose["messages"]
    )
    # registering it is judged alike: compatible through version 2 …
    assert client.register_schema("orders-value", json_schema(ORDER, [address_ref(2)]))
    # … and breaking through version 3, which the topic's consumer must acknowledge
    SchemaVersion.objects.get(topic__name="orders", version=2).topic.consumers.add(
        services.service_ensure(actor=SYSTEM_ACTOR, name="billing")
    )
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("orders-value", json_schema(ORDER, [address_ref(3)]))
    assert refused.value.http_status_code == 409
    assert "billing" in refused.value.error_message


@pytest.mark.parametrize(
    ("reference", "why"),
    [
        ({"name": "address.json", "subject": "nowhere-value", "version": 1}, "nowhere-value"),
        ({"name": "address.json", "subject": "address-value", "version": 7}, "version 7"),
        ({"name": "address.json", "subject": "address-value"}, "no valid version"),
        ({"subject": "address-value", "version": 1}, "no name"),
        ("address.json", "not an object"),
    ],
)
def test_a_reference_to_no_live_version_is_an_invalid_schema(live, reference, why):
    new_client, http = live
    new_client().register_schema("address-value", json_schema(ADDRESS))
    body = {"schema": json.dumps(ORDER), "schemaType": "JSON", "references": [reference]}
    for path in ("/subjects/orders-value/versions", "/subjects/address-value"):
        answer = http.post(path, json=body)
        assert answer.status_code == 422, answer.text
        assert answer.json()["error_code"] == 42201
        assert why in answer.json()["message"]
    assert not SchemaVersion.objects.filter(topic__name="orders").exists()


def test_a_soft_deleted_version_cannot_be_referenced(live):
    new_client, http = live
    client = new_client()
    client.register_schema("address-value", json_schema(ADDRESS))
    client.register_schema("address-value", json_schema(ADDRESS_LONGER_ZIP))
    client.delete_version("address-value", 1)
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("orders-value", json_schema(ORDER, [address_ref(1)]))
    assert refused.value.error_code == 42201
    # an undeclared $ref is remote, and never fetched
    body = {"schema": json.dumps(ORDER), "schemaType": "JSON"}
    answer = http.post("/subjects/orders-value/versions", json=body)
    assert answer.json()["error_code"] == 42201
    assert "not local" in answer.json()["message"]


def test_a_referenced_version_cannot_be_deleted_until_its_referrer_is_deleted(live):
    new_client, http = live
    client = new_client()
    client.register_schema("address-value", json_schema(ADDRESS))
    order_id = client.register_schema("orders-value", json_schema(ORDER, [address_ref()]))

    for call in (
        lambda: client.delete_version("address-value", 1),
        lambda: client.delete_subject("address-value"),
    ):
        with pytest.raises(SchemaRegistryError) as refused:
            call()
        assert (refused.value.http_status_code, refused.value.error_code) == (422, 42206)
        assert "One or more references exist to the schema" in refused.value.error_message
    answer = http.delete("/subjects/address-value/versions/1", params={"permanent": "true"})
    assert answer.json()["error_code"] == 42206
    assert SchemaVersion.objects.get(topic__name="address").deleted_at is None

    # a soft-deleted referrer is out of its subject, as the reference has it: it is no
    # longer listed, nor does it keep the version from being soft-deleted
    assert client.delete_version("orders-value", 1) == 1
    assert http.get(f"/schemas/ids/{order_id}").json()["references"][0]["version"] == 1
    assert http.get("/subjects/address-value/versions/1/referencedby").json() == []
    assert client.delete_version("address-value", 1) == 1
    # still served by id, it keeps what it references from being deleted permanently
    answer = http.delete("/subjects/address-value/versions/1", params={"permanent": "true"})
    assert (answer.status_code, answer.json()["error_code"]) == (422, 42206)
    # hard-deleted, it lets go
    assert client.delete_version("orders-value", 1, permanent=True) == 1
    assert not StoredReference.objects.exists()
    assert client.delete_version("address-value", 1, permanent=True) == 1
    assert not SchemaVersion.objects.exists()


def test_an_avro_schema_uses_a_named_type_a_reference_defines(live):
    new_client, http = live
    client = new_client()
    produced_by_orders("com.acme.Address")
    address_id = client.register_schema(
        "com.acme.Address", Schema(json.dumps(AVRO_ADDRESS), "AVRO")
    )
    reference = SchemaReference("com.acme.Address", "com.acme.Address", 1)
    order = Schema(json.dumps(AVRO_ORDER), "AVRO", references=[reference])
    order_id = client.register_schema("orders-value", order)
    assert new_client().register_schema("orders-value", order) == order_id  # idempotent

    latest = new_client().get_latest_version("orders-value")
    served = json.loads(latest.schema.schema_str)
    # the type is used by name, not written out; short within its own namespace, as the
    # reference (Avro Java's Schema.toString) writes it
    assert [f["type"] for f in served["fields"]][1:] == ["Address", ["null", "Address"]]
    assert [(r.name, r.subject, r.version) for r in latest.schema.references] == [
        ("com.acme.Address", "com.acme.Address", 1)
    ]
    assert http.get("/subjects/com.acme.Address/versions/1/referencedby").json() == [order_id]
    # an unknown type name, with or without references, is an invalid schema
    bad = {**AVRO_ORDER, "fields": [{"name": "x", "type": "com.acme.Nowhere"}]}
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema("orders-value", Schema(json.dumps(bad), "AVRO", [reference]))
    assert refused.value.error_code == 42201

    # the client's serializer and deserializer resolve the reference through the registry
    serializer = AvroSerializer(
        new_client(),
        order,
        conf={"auto.register.schemas": False, "use.latest.version": True},
    )
    context = SerializationContext("orders", MessageField.VALUE)
    record = {"id": "o-1", "ship_to": {"street": "Main St"}, "bill_to": None}
    data = serializer(record, context)
    assert int.from_bytes(data[1:5], "big") == order_id
    assert AvroDeserializer(new_client())(data, context) == record

    # a breaking change inside the referenced type shows through the referencing schema
    client.set_compatibility("com.acme.Address", "NONE")
    widened = {
        **AVRO_ADDRESS,
        "fields": [*AVRO_ADDRESS["fields"], {"name": "zip", "type": "string"}],
    }
    client.register_schema("com.acme.Address", Schema(json.dumps(widened), "AVRO"))
    newer = Schema(
        json.dumps(AVRO_ORDER),
        "AVRO",
        references=[SchemaReference("com.acme.Address", "com.acme.Address", 2)],
    )
    assert client.test_compatibility("orders-value", newer) is False
    assert address_id != order_id


def test_a_protobuf_import_no_reference_names_is_an_invalid_schema(live):
    _, http = live
    schema = 'syntax = "proto3";\nimport "money.proto";\nmessage M { Money m = 1; }'
    body = {"schema": schema, "schemaType": "PROTOBUF", "references": []}
    answer = http.post("/subjects/orders-value/versions", json=body)
    assert (answer.status_code, answer.json()["error_code"]) == (422, 42201)
    assert "money.proto" in answer.json()["message"]


# --------------------------------------------------------------------------- bundling


@pytest.mark.django_db(transaction=False)
def test_a_bundle_stands_alone_and_undoes_to_the_schema_as_registered():
    # given a 2020-12 schema with an $id, whose $refs name a reference relatively
    order = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://schemas.acme.example/order.json",
        "type": "object",
        "properties": {"ship_to": {"$ref": "address.json"}, "local": {"$ref": "#/$defs/x"}},
        "$defs": {"x": {"type": "string"}},
    }
    name = "https://schemas.acme.example/address.json"
    # when it is bundled
    bundled = compatibility.bundle(order, [(name, ADDRESS)])
    # then it has local $refs only, is a valid schema, and undoes to what was sent, the
    # $ref matched through $id spelled as the reference names it (the same URI)
    assert compatibility.parse_schema(bundled) == bundled
    assert set(bundled["$defs"]) == {"x", f"steward:reference:{name}"}
    ship_to = {"ship_to": {"$ref": name}}
    assert compatibility.unbundle(bundled, [name]) == {
        **order,
        "properties": {**order["properties"], **ship_to},
    }


@pytest.mark.django_db(transaction=False)
def test_an_avro_type_nested_in_a_reference_may_be_used_before_the_reference_s_own():
    address = avro.parse_schema(
        json.dumps(
            {
                **AVRO_ADDRESS,
                "fields": [
                    {"name": "c", "type": {"type": "enum", "name": "Country", "symbols": ["NL"]}}
                ],
            }
        )
    )
    order = {
        "type": "record",
        "name": "Order",
        "namespace": "com.acme",
        "fields": [{"name": "country", "type": "Country"}, {"name": "to", "type": "Address"}],
    }
    bundled = avro.bundle(json.dumps(order), [("com.acme.Address", address)])
    fields = json.loads(bundled.normal_form())["fields"]
    assert fields[0]["type"]["name"] == "com.acme.Country"  # written out where first used
    assert fields[1]["type"]["fields"][0]["type"] == "com.acme.Country"  # then by name
    assert avro.unbundle(bundled, address.names)["fields"] == [
        {"name": "country", "type": "com.acme.Country"},
        {"name": "to", "type": "com.acme.Address"},
    ]


def test_a_caller_who_may_not_delete_learns_nothing_of_the_references(live, live_server):
    new_client, _ = live
    client = new_client()
    addresses(client, ADDRESS)  # a topic the orders service produces
    client.register_schema("orders-value", json_schema(ORDER, [address_ref()]))
    intruder = ("intruder", service_token(scopes=["registry:write"], name="intruder").secret)
    base = f"{live_server.url}/api/schema-registry"
    with httpx.Client(base_url=base, auth=intruder, timeout=30) as http:
        answer = http.delete("/subjects/address-value/versions/1")
    assert (answer.status_code, answer.json()["error_code"]) == (403, 40301)
