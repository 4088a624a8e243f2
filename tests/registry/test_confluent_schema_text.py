"""The schema string the Schema Registry API answers: the reference registry's canonical
string of the schema as sent (apps.registry.formats.schema_text), by id, by subject-version and
under `…/schema`, while lookups of the schema as first sent still find it.

The expected Avro strings are what Apache Avro's Java library writes for these schemas
(`Schema.toString()`, checked against it while this was written), and the normalized
ones what the reference's `AvroSchemaUtils.toNormalizedString` then makes of them."""

import json

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from apps.registry.formats import avro, schema_text
from apps.registry.models import SchemaVersion

pytestmark = pytest.mark.django_db(transaction=True)

# an Avro schema as a producer may send it: attributes in any order, a full name in
# `name`, a doc where Avro reads none, a custom attribute
ORDER = {
    "fields": [
        {"type": "string", "name": "id", "doc": "the order's id"},
        {
            "name": "amount",
            "type": {"logicalType": "decimal", "type": "bytes", "precision": 9, "scale": 2},
        },
        {"default": None, "name": "note", "type": ["null", {"type": "string", "doc": "none"}]},
        {
            "name": "ship_to",
            "type": {
                "name": "com.acme.shipping.Address",
                "type": "record",
                "fields": [{"name": "street", "type": "string"}],
            },
        },
        {"name": "bill_to", "type": ["null", "com.acme.shipping.Address"], "default": None},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["NEW", "PAID"]}},
        {"name": "total", "type": "double", "default": 1e7},
    ],
    "name": "com.acme.Order",
    "type": "record",
    "x-owner": "orders",
}
ORDER_TEXT = (
    '{"type":"record","name":"Order","namespace":"com.acme","fields":['
    '{"name":"id","type":"string","doc":"the order\'s id"},'
    '{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},'
    '{"name":"note","type":["null","string"],"default":null},'
    '{"name":"ship_to","type":{"type":"record","name":"Address","namespace":"com.acme.shipping",'
    '"fields":[{"name":"street","type":"string"}]}},'
    '{"name":"bill_to","type":["null","com.acme.shipping.Address"],"default":null},'
    '{"name":"status","type":{"type":"enum","name":"Status","symbols":["NEW","PAID"]}},'
    '{"name":"total","type":"double","default":1.0E7}],"x-owner":"orders"}'
)


def _register(http, subject: str, text: str, kind: str, **params):
    answer = http.post(
        f"/subjects/{subject}/versions", json={"schema": text, "schemaType": kind}, params=params
    )
    assert answer.status_code == 200, answer.text
    return answer.json()


def _served(http, schema_id: int, subject: str, version: int) -> set[str]:
    """Every string the API answers for the schema, by id and by subject-version."""
    by_id = http.get(f"/schemas/ids/{schema_id}")
    raw_by_id = http.get(f"/schemas/ids/{schema_id}/schema")
    by_version = http.get(f"/subjects/{subject}/versions/{version}")
    raw_by_version = http.get(f"/subjects/{subject}/versions/{version}/schema")
    listed = [s for s in http.get("/schemas").json() if s["subject"] == subject]
    assert raw_by_id.headers["content-type"] == "application/vnd.schemaregistry.v1+json"
    return {
        by_id.json()["schema"],
        raw_by_id.text,
        by_version.json()["schema"],
        raw_by_version.text,
        *(s["schema"] for s in listed),
    }


def test_an_avro_schema_is_answered_as_the_reference_writes_it_and_found_as_first_sent(live):
    new_client, http = live
    sent = json.dumps(ORDER, indent=2)
    # when
    registered = _register(http, "orders-value", sent, "AVRO")
    schema_id = registered["id"]
    # then: the same string everywhere, as Avro Java writes it
    assert registered["schema"] == ORDER_TEXT
    assert _served(http, schema_id, "orders-value", 1) == {ORDER_TEXT}
    assert new_client().get_schema(schema_id).schema_str == ORDER_TEXT
    # the schema as first sent, and as answered, are both the registered version
    for text in (sent, ORDER_TEXT):
        found = http.post("/subjects/orders-value", json={"schema": text})
        assert (found.status_code, found.json()["id"], found.json()["version"]) == (
            200,
            schema_id,
            1,
        )
        assert found.json()["schema"] == ORDER_TEXT
    # registered again as sent, or as answered: the same version
    assert _register(http, "orders-value", ORDER_TEXT, "AVRO")["id"] == schema_id
    client = new_client()
    assert client.register_schema("orders-value", Schema(sent, "AVRO")) == schema_id
    assert client.get_versions("orders-value") == [1]
    assert client.lookup_schema("orders-value", Schema(sent, "AVRO")).schema_id == schema_id
    # and the unmodified serializers read and write with the string the registry answers
    context = SerializationContext("orders", MessageField.VALUE)
    record = {
        "id": "o-1",
        "amount": b"\x01",
        "note": None,
        "ship_to": {"street": "Main St"},
        "bill_to": None,
        "status": "PAID",
        "total": 2.5,
    }
    data = AvroSerializer(new_client(), sent, conf={"auto.register.schemas": False})(
        record, context
    )
    assert int.from_bytes(data[1:5], "big") == schema_id
    read = AvroDeserializer(new_client())(data, context)
    assert {**read, "amount": b"\x01"} == record  # (the decimal comes back as a Decimal)


def test_normalize_true_writes_an_avro_schema_the_way_the_reference_normalizes_it(live):
    new_client, http = live
    sent = {
        "type": "record",
        "name": "Reading",
        "namespace": "com.acme",
        "z-owner": "sensors",
        "a-team": {"on": "call", "lead": "kim"},
        "fields": [
            {"name": "value", "type": "double", "default": 1, "order": "ASCENDING"},
            {
                "name": "seen",
                "type": {"type": "long", "x-unit": "ms", "logicalType": "timestamp-millis"},
            },
        ],
    }
    plain = (
        '{"type":"record","name":"Reading","namespace":"com.acme","fields":['
        '{"name":"value","type":"double","default":1},'
        '{"name":"seen","type":{"type":"long","x-unit":"ms","logicalType":"timestamp-millis"}}],'
        '"z-owner":"sensors","a-team":{"on":"call","lead":"kim"}}'
    )
    # attributes sorted (a logical type's own first), defaults as their field's type reads
    # them, objects' keys sorted
    normalized = (
        '{"type":"record","name":"Reading","namespace":"com.acme","fields":['
        '{"name":"value","type":"double","default":1.0},'
        '{"name":"seen","type":{"type":"long","logicalType":"timestamp-millis","x-unit":"ms"}}],'
        '"a-team":{"lead":"kim","on":"call"},"z-owner":"sensors"}'
    )
    assert schema_text("AVRO", json.dumps(sent)) == plain
    # when: registered by the unmodified client with normalize.schemas
    schema_id = new_client().register_schema(
        "readings-value", Schema(json.dumps(sent), "AVRO"), normalize_schemas=True
    )
    # then
    assert _served(http, schema_id, "readings-value", 1) == {normalized}


def test_a_json_schema_is_answered_compact_in_the_key_order_sent(live):
    new_client, http = live
    sent = (
        '{\n  "type": "object",\n  "title": "Payment",\n  "properties": {\n'
        '    "id": {"type": "string", "description": "tab\\there"},\n'
        '    "amount": {"type": "number", "minimum": 0.50, "maximum": 1e6}\n  },\n'
        '  "required": ["id"]\n}'
    )
    # numbers with a fraction or an exponent as the reference's BigDecimal writes them
    expected = (
        '{"type":"object","title":"Payment","properties":{'
        '"id":{"type":"string","description":"tab\\there"},'
        '"amount":{"type":"number","minimum":0.50,"maximum":1E+6}},"required":["id"]}'
    )
    registered = _register(http, "payments-value", sent, "JSON")
    assert registered["schema"] == expected
    assert _served(http, registered["id"], "payments-value", 1) == {expected}
    assert new_client().get_schema(registered["id"]).schema_str == expected
    # looked up as sent, or with its keys in another order: the same version (Steward's
    # ids do not tell key orders apart), answered with the string looked up
    reordered = json.dumps(json.loads(sent), sort_keys=True)
    for text in (sent, reordered):
        found = http.post("/subjects/payments-value", json={"schema": text, "schemaType": "JSON"})
        assert found.json()["id"] == registered["id"]
        assert found.json()["schema"] == schema_text("JSON", text)
    # normalize=true sorts the keys; the id is the same schema's
    again = _register(http, "refunds-value", sent, "JSON", normalize="true")
    assert again["id"] == registered["id"]
    assert again["schema"] == (
        '{"properties":{"amount":{"maximum":1E+6,"minimum":0.50,"type":"number"},'
        '"id":{"description":"tab\\there","type":"string"}},"required":["id"],'
        '"title":"Payment","type":"object"}'
    )
    assert http.get("/subjects/refunds-value/versions/1/schema").text == again["schema"]
    # by id, the first registration's string
    assert http.get(f"/schemas/ids/{registered['id']}/schema").text == expected


def test_a_version_kept_before_its_string_was_is_answered_from_its_stored_document(live):
    _, http = live
    avro_id = _register(http, "legacy-value", json.dumps(ORDER), "AVRO")["id"]
    json_id = _register(http, "legacy-key", '{"type": "string", "title": "Key"}', "JSON")["id"]
    # given: versions registered before the string was kept
    SchemaVersion.objects.update(text="")
    # then: Avro as the reference writes it, though a type's attributes come in the order
    # the database kept them; a JSON Schema with its keys sorted, as before
    (answer,) = _served(http, avro_id, "legacy-value", 1)
    assert answer == schema_text("AVRO", SchemaVersion.objects.get(role="value").schema)
    assert '"name":"Order","namespace":"com.acme"' in answer
    assert avro.normal_form(answer) == avro.normal_form(ORDER_TEXT)
    assert _served(http, json_id, "legacy-key", 1) == {'{"title":"Key","type":"string"}'}
