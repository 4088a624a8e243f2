"""Schema references and key schemas in a release's ModelSync (issue 37 §7): an entry's
schema may name other subjects' versions in `references`, as the Schema Registry API
takes them, resolved the one way that API resolves them; an entry may declare its key
schema beside its payload's, each its own subject (`<topic>-key`, `<topic>-value`).
What a release publishes is served by the Schema Registry API with the same
references; a reference that names nothing refuses the release with a stable code."""

import json

import pytest
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from rest_framework.test import APIClient

from apps.core.scope import system_scope
from apps.registry.models import ModelSync, SchemaReference, SchemaVersion, Topic
from apps.tenancy.models import AuditEvent
from tests.conftest import bearer
from tests.factories import service_token
from tests.registry.test_confluent_references import AVRO_ADDRESS, AVRO_ORDER

pytestmark = pytest.mark.django_db(transaction=True)

SYNC_URL = "/api/v1/registry/model-sync/"
ADDRESS_REFERENCE = {"name": "com.acme.Address", "subject": "address-value", "version": 1}
# orders.avro: its payload uses the Address record another subject defines, and its
# key schema is declared beside it
ORDER_ENTRY = {
    "name": "orders.avro",
    "schema_type": "AVRO",
    "schema": AVRO_ORDER,
    "references": [ADDRESS_REFERENCE],
    "key": {"schema_type": "AVRO", "schema": {"type": "string"}},
}
JSON_ADDRESS = {"type": "object", "properties": {"street": {"type": "string"}}}
JSON_ORDER = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "ship_to": {"$ref": "address.json"}},
}


def orders():
    """The releasing service's client (`live`'s Schema Registry clients speak for another
    service, `orders`, which only reads here)."""
    return bearer(
        APIClient(), service_token(scopes=["registry:read", "registry:write"], name="shop")
    )


def model_sync(client, release, *topics):
    return client.post(SYNC_URL, {"release": release, "topics": list(topics)}, format="json")


def addresses(client, kind="AVRO", schema=AVRO_ADDRESS):
    """address-value v1, published by the releasing service's release."""
    answer = model_sync(
        client, "addr-1", {"name": "address", "schema_type": kind, "schema": schema}
    )
    assert answer.status_code == 200, answer.content
    assert answer.json()["topics"][0]["outcome"] == "published"


def test_an_avro_value_referencing_another_subjects_record_is_served_with_its_references(live):
    new_client, http = live
    client = orders()
    addresses(client)
    # when
    answer = model_sync(client, "orders-1", ORDER_ENTRY)
    # then: both subjects are published, the references resolved in the answer
    assert answer.status_code == 200, answer.content
    [topic] = answer.json()["topics"]
    assert (topic["outcome"], topic["version"]) == ("published", 1)
    assert topic["references"] == [ADDRESS_REFERENCE]
    assert (topic["key"]["outcome"], topic["key"]["version"]) == ("published", 1)
    order = SchemaVersion.objects.get(topic__name="orders.avro", role="value")
    assert SchemaVersion.objects.get(topic__name="orders.avro", role="key").schema_type == "AVRO"
    assert [(r.name, r.referenced.topic.name) for r in SchemaReference.objects.all()] == [
        ("com.acme.Address", "address")
    ]
    # the Schema Registry API serves the version with the same references, the type used
    # by name as it was sent
    latest = new_client().get_latest_version("orders.avro-value")
    assert latest.schema_id == order.identity_id
    assert [(r.name, r.subject, r.version) for r in latest.schema.references] == [
        ("com.acme.Address", "address-value", 1)
    ]
    served = json.loads(latest.schema.schema_str)
    assert [f["type"] for f in served["fields"]] == ["string", "Address", ["null", "Address"]]
    by_id = http.get(f"/schemas/ids/{order.identity_id}").json()
    assert by_id["references"] == [ADDRESS_REFERENCE]
    address_id = SchemaVersion.objects.get(topic__name="address").identity_id
    assert http.get("/subjects/address-value/versions/1/referencedby").json() == [order.identity_id]
    assert address_id != order.identity_id
    assert http.get("/subjects").json() == ["address-value", "orders.avro-key", "orders.avro-value"]
    # and an unmodified client writes and reads records through it
    serializer = AvroSerializer(
        new_client(),
        latest.schema,
        conf={"auto.register.schemas": False, "use.latest.version": True},
    )
    context = SerializationContext("orders.avro", MessageField.VALUE)
    record = {"id": "o-1", "ship_to": {"street": "Main St"}, "bill_to": None}
    data = serializer(record, context)
    assert int.from_bytes(data[1:5], "big") == order.identity_id
    assert AvroDeserializer(new_client())(data, context) == record
    # the same release again answers the same, and a new release with the same schema
    # and references is unchanged
    assert model_sync(client, "orders-1", ORDER_ENTRY).json() == answer.json()
    again = model_sync(client, "orders-2", ORDER_ENTRY).json()["topics"][0]
    assert (again["outcome"], again["key"]["outcome"]) == ("unchanged", "unchanged")
    assert SchemaReference.objects.count() == 1


def test_a_json_schema_references_the_latest_version_of_another_subject(live):
    _, http = live
    client = orders()
    addresses(client, "JSON", JSON_ADDRESS)
    latest = {"name": "address.json", "subject": "address-value", "version": -1}
    answer = model_sync(
        client, "orders-1", {"name": "orders", "schema": JSON_ORDER, "references": [latest]}
    )
    assert answer.status_code == 200, answer.content
    [topic] = answer.json()["topics"]
    # "latest" is answered as the version it named
    assert topic["outcome"] == "published"
    assert topic["references"] == [{**latest, "version": 1}]
    served = http.get("/subjects/orders-value/versions/latest").json()
    assert json.loads(served["schema"]) == JSON_ORDER
    assert served["references"] == [{**latest, "version": 1}]


def test_a_key_schema_is_its_own_subject_with_its_own_gate():
    client = orders()
    first = {"name": "orders", "consumers": ["billing"], "schema": JSON_ADDRESS}
    key = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    answer = model_sync(client, "o-1", {**first, "key": {"schema": key}})
    assert answer.json()["topics"][0]["key"]["outcome"] == "published"
    # a key that now requires a property v1 never wrote is breaking: it waits, the
    # payload's subject is unchanged
    breaking = {**key, "properties": {**key["properties"], "n": {"type": "number"}}}
    breaking["required"] = ["id", "n"]
    answer = model_sync(client, "o-2", {**first, "key": {"schema": breaking}})
    topic = answer.json()["topics"][0]
    assert topic["outcome"] == "unchanged"
    assert topic["key"]["outcome"] == "awaiting_acknowledgement"
    assert topic["key"]["awaiting"] == ["billing"]
    assert Topic.objects.get(name="orders").current_schema_version == 1
    # an invalid key schema rejects the entry, saying it is the key's
    answer = model_sync(client, "o-3", {**first, "key": {"schema": {"type": "no-such"}}})
    rejected = answer.json()["topics"][0]
    assert rejected["outcome"] == "rejected" and rejected["reason"].startswith("key: ")


def _nothing_written():
    with system_scope():
        return (
            SchemaVersion.objects.count(),
            Topic.objects.count(),
            ModelSync.objects.count(),
            SchemaReference.objects.count(),
            AuditEvent.objects.count(),
        )


@pytest.mark.parametrize(
    ("reference", "where"),
    [
        pytest.param(
            {**ADDRESS_REFERENCE, "subject": "nowhere-value"}, "topics[1]", id="no-subject"
        ),
        pytest.param({**ADDRESS_REFERENCE, "version": 7}, "topics[1]", id="no-version"),
        pytest.param({**ADDRESS_REFERENCE, "version": 0}, "topics[1]", id="version-zero"),
        pytest.param({**ADDRESS_REFERENCE, "subject": "not a subject"}, "topics[1]", id="bad"),
        pytest.param(
            {**ADDRESS_REFERENCE, "subject": "orders.json-value"}, "topics[1]", id="other-type"
        ),
        pytest.param(ADDRESS_REFERENCE, "topics[1].key", id="in-the-key"),
    ],
)
def test_a_bad_reference_refuses_the_release_with_a_stable_code_and_writes_nothing(
    reference, where
):
    client = orders()
    addresses(client)
    model_sync(client, "json-1", {"name": "orders.json", "schema": JSON_ADDRESS})
    before = _nothing_written()
    value = {"schema_type": "AVRO", "schema": AVRO_ORDER, "references": [ADDRESS_REFERENCE]}
    if where.endswith(".key"):
        # the value's references are sound; the key's is another subject of another type
        value["key"] = {"schema": {"type": "string"}, "references": [reference]}
    else:
        value["references"] = [reference]
    earlier = {"name": "orders.first", "schema": JSON_ADDRESS}
    refused = model_sync(client, "orders-1", earlier, {"name": "orders.avro", **value})
    assert refused.status_code == 400, refused.content
    assert refused["Content-Type"].startswith("application/problem+json")
    problem = refused.json()
    assert problem["code"] == "invalid_schema_reference"
    assert problem["field"] == f"{where}.references"
    # the whole release is refused: not even the entry before it is written
    assert _nothing_written() == before
    # and the release, fixed, is taken
    fixed = model_sync(client, "orders-1", earlier, ORDER_ENTRY)
    assert [t["outcome"] for t in fixed.json()["topics"]] == ["published", "published"]


@pytest.mark.parametrize(
    "reference",
    [
        {"name": "com.acme.Address", "subject": "address-value"},
        {**ADDRESS_REFERENCE, "version": "latest"},
        {**ADDRESS_REFERENCE, "extra": 1},
        "com.acme.Address",
    ],
)
def test_a_malformed_reference_is_refused_by_field(reference):
    client = orders()
    addresses(client)
    before = _nothing_written()
    entry = {"name": "orders.avro", "schema_type": "AVRO", "schema": AVRO_ORDER}
    refused = model_sync(client, "orders-1", {**entry, "references": [reference]})
    assert refused.status_code == 400, refused.content
    assert refused["Content-Type"].startswith("application/problem+json")
    assert refused.json()["code"] in ("invalid", "unknown_field")
    assert "topics" in refused.json()["errors"]
    assert _nothing_written() == before
