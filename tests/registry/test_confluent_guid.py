"""A schema's GUID, as the reference registry (8.x) derives it from the schema's content
and answers it: pinned against the reference's own MD5 vectors, answered with the
schema wherever the reference answers it, looked up by `GET /schemas/guids/{guid}`, and
carried in a message header by confluent-kafka's serializer and deserializer."""

import hashlib
import json
import uuid

import pytest
from confluent_kafka.schema_registry import (
    Schema,
    SchemaReference,
    dual_schema_id_deserializer,
    header_schema_id_serializer,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from apps.core.context import SYSTEM_ACTOR
from apps.registry import services
from apps.registry import versions as schemas
from apps.registry.models import SchemaIdentity, schema_guid
from tests.registry.test_confluent_references import AVRO_ADDRESS, AVRO_ORDER

pytestmark_live = pytest.mark.django_db(transaction=True)

# --------------------------------------------------------------------------- the hash

# core/src/test/.../SchemaValueTest.java (testSchemaValueMD5 and the complex ones): the
# strings the reference hashes and the MD5 it pins for each, here as the UUID it makes.
RECORD = (
    '{"type":"record","name":"myrecord","fields":[{"type":"string","default":null,"name":"f"}]}'
)
COMPLEX_PROTOBUF = (
    'syntax = "proto3";\n\nmessage Complex {\n  int32 int32 = 1;\n  int64 int64 = 2;\n'
    "  float float32 = 3;\n  double float64 = 4;\n  bool boolean = 5;\n  string string = 6;\n"
    "  bytes bytes = 7;\n  repeated string array = 8;\n  repeated ComplexEntry map = 9;\n\n"
    "  message ComplexEntry {\n    string key = 1;\n    int32 value = 2;\n  }\n}\n"
)


def _complex_avro() -> str:
    def field(name, type_, **more):
        return {"name": name, "type": type_, **more}

    fields = [
        field(
            "int8",
            {
                "type": "int",
                "connect.doc": "int8 field",
                "connect.default": 2,
                "connect.type": "int8",
            },
            default=2,
        ),
        field("int16", {"type": "int", "connect.type": "int16"}),
        field("int32", "int"),
        field("int64", "long"),
        field("float32", "float"),
        field("float64", "double"),
        field("boolean", "boolean"),
        field("string", "string"),
        field("bytes", "bytes"),
        field("array", {"type": "array", "items": "string"}),
        field("map", {"type": "map", "values": "int"}),
        field(
            "mapNonStringKeys",
            {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "MapEntry",
                    "fields": [field("key", "int"), field("value", "int")],
                },
            },
        ),
    ]
    document = {"type": "record", "name": "Complex", "namespace": "io.confluent.avro"}
    # the test's string, as json.dumps writes it indented by two spaces
    return json.dumps({**document, "fields": fields}, indent=2) + "\n"


@pytest.mark.parametrize(
    ("text", "contract", "pinned"),
    [
        (RECORD, None, "1d20cbb9-e5e3-5e97-54e7-da170b6e5ddb"),
        # an empty metadata and one migration rule, every field but kind and mode null
        (
            RECORD,
            ({}, {"migrationRules": [{"kind": "TRANSFORM", "mode": "WRITEREAD"}]}),
            "16f1eca5-ebf9-22b3-da80-212f8fa7342e",
        ),
        (_complex_avro(), None, "c4ad6448-4d68-34d2-c8cf-7443afc25d54"),
        (COMPLEX_PROTOBUF, None, "d49cbf63-d35b-ba54-e1f7-0bdd51528a37"),
    ],
    ids=["record", "record-with-contract", "complex-avro", "complex-protobuf"],
)
def test_the_guid_is_the_references_md5_of_the_schema(text, contract, pinned):
    assert schema_guid(text, (), contract) == pinned


class _Referenced:
    """A referenced version, as schema_guid reads one."""

    def __init__(self, topic: str, role: str, version: int):
        self.topic = type("Topic", (), {"name": topic})
        self.role, self.version = role, version


def test_each_reference_adds_its_name_subject_and_four_byte_version():
    references = [("Address", _Referenced("addresses", "value", 3))]
    body = b'"x"' + b"Address" + b"addresses-value" + b"\x00\x00\x00\x03"
    assert schema_guid('"x"', references) == str(uuid.UUID(bytes=hashlib.md5(body).digest()))


def test_a_contract_hashes_sorted_as_the_references_sorted_maps_and_sets():
    rule = {"name": "r", "kind": "CONDITION", "mode": "WRITE", "type": "CEL", "expr": "true"}
    metadata = {
        "tags": {"b": ["PII", "A"], "a": ["X"]},
        "properties": {"owner": "x", "app": "y"},
        "sensitive": ["s2", "s1"],
    }
    rules = {"domainRules": [{**rule, "tags": ["t2", "t1"], "params": {"k2": "v", "k1": "w"}}]}
    # Metadata.updateHash and Rule.updateHash write these bytes, in this order
    body = (
        b'"x"\x01' + b"aX" + b"bAPII" + b"appyownerx" + b"s1s2"
        b"\x01" + b"rCONDITIONWRITECEL" + b"t1t2" + b"k1wk2v" + b"true"
    )
    expected = str(uuid.UUID(bytes=hashlib.md5(body).digest()))
    assert schema_guid('"x"', (), (metadata, rules)) == expected
    # a disabled rule is another contract: a 1 byte after it
    disabled = {"domainRules": [{**rules["domainRules"][0], "disabled": True}]}
    assert schema_guid('"x"', (), (metadata, disabled)) != expected
    # no metadata is not an empty one
    assert schema_guid('"x"', (), ({}, None)) != schema_guid('"x"')


# --------------------------------------------------------------------------- the API

RECORD_V1 = {
    "type": "record",
    "name": "Payment",
    "namespace": "com.acme",
    "fields": [{"name": "id", "type": "string"}, {"name": "amount", "type": "long"}],
}


def avro(document, **fields) -> Schema:
    return Schema(json.dumps(document), "AVRO", **fields)


def md5(body: bytes) -> bytes:
    return hashlib.md5(body).digest()


def md5_guid(text: str) -> str:
    return str(uuid.UUID(bytes=md5(text.encode())))


@pytestmark_live
def test_every_answer_the_reference_gives_a_guid_has_it(live):
    new_client, http = live
    metadata = {"properties": {"owner": "payments"}}
    registered = new_client().register_schema_full_response("payments-value", avro(RECORD_V1))
    guid = registered.guid
    # the reference's GUID: the MD5 of the string it answers for the schema
    stored = http.get("/subjects/payments-value/versions/1").json()
    assert stored["guid"] == guid == md5_guid(stored["schema"])
    assert SchemaIdentity.objects.get(pk=registered.schema_id).guid == uuid.UUID(guid)
    client = new_client()
    assert client.get_version("payments-value", 1).guid == guid
    assert client.get_latest_version("payments-value").guid == guid
    assert client.lookup_schema("payments-value", avro(RECORD_V1)).guid == guid
    by_id = http.get(f"/schemas/ids/{registered.schema_id}").json()
    assert by_id == {"schema": stored["schema"], "guid": guid}
    listed = http.get("/schemas", params={"subjectPrefix": "payments-value"}).json()
    assert [s["guid"] for s in listed] == [guid]
    # a version with metadata, found by it: another schema, whose GUID hashes the metadata
    with_metadata = http.post(
        "/subjects/payments-value/versions",
        json={"schema": json.dumps(RECORD_V1), "metadata": metadata},
    ).json()
    found = http.get(
        "/subjects/payments-value/metadata", params={"key": "owner", "value": "payments"}
    )
    body = with_metadata["schema"].encode() + b"\x01" + b"owner" + b"payments"
    assert found.json()["guid"] == with_metadata["guid"] == str(uuid.UUID(bytes=md5(body)))


@pytestmark_live
def test_two_subjects_of_one_schema_share_its_guid_another_contract_has_another(live):
    new_client, http = live
    client = new_client()
    payments = client.register_schema_full_response("payments-value", avro(RECORD_V1))
    refunds = client.register_schema_full_response("refunds-value", avro(RECORD_V1))
    assert (refunds.schema_id, refunds.guid) == (payments.schema_id, payments.guid)
    contract = {"properties": {"owner": "refunds"}}
    other = http.post(
        "/subjects/refunds-value/versions",
        json={"schema": json.dumps(RECORD_V1), "metadata": contract},
    ).json()
    assert other["id"] != payments.schema_id
    assert other["guid"] not in (None, payments.guid)


@pytestmark_live
def test_the_client_fetches_a_schema_by_its_guid(live):
    new_client, http = live
    registered = new_client().register_schema_full_response("payments-value", avro(RECORD_V1))
    fetched = new_client().get_schema_by_guid(registered.guid)
    assert json.loads(fetched.schema_str) == json.loads(
        http.get("/subjects/payments-value/versions/1/schema").text
    )
    # the same schema answered by id and by GUID, a GUID written in capitals too
    by_guid = http.get(f"/schemas/guids/{registered.guid.upper()}").json()
    assert by_guid == http.get(f"/schemas/ids/{registered.schema_id}").json()


@pytestmark_live
def test_the_ids_of_a_guid_are_answered_by_context(live):
    new_client, http = live
    client = new_client()
    registered = client.register_schema_full_response("payments-value", avro(RECORD_V1))
    client.register_schema_full_response(":.eu:payments-value", avro(RECORD_V1))
    answer = http.get(f"/schemas/guids/{registered.guid}/ids").json()
    assert answer == [
        {"context": ".", "id": registered.schema_id},
        {"context": ".eu", "id": registered.schema_id},
    ]


@pytestmark_live
@pytest.mark.parametrize("guid", ["9f1b7c1e-3f3a-4c55-8d0e-6a2b1c9d4e70", "not-a-guid", "0" * 40])
def test_an_unknown_or_malformed_guid_is_a_schema_not_found(live, guid):
    new_client, http = live
    new_client().register_schema("payments-value", avro(RECORD_V1))
    for path in (f"/schemas/guids/{guid}", f"/schemas/guids/{guid}/ids"):
        answer = http.get(path)
        assert (answer.status_code, answer.json()["error_code"]) == (404, 40403)
    with pytest.raises(SchemaRegistryError) as missing:
        new_client().get_schema_by_guid(str(uuid.uuid4()))
    assert missing.value.error_code == 40403


@pytestmark_live
def test_a_header_guid_round_trips_through_the_serializer_and_deserializer(live):
    new_client, _ = live
    new_client().register_schema("payments-value", avro(RECORD_V1))
    serializer = AvroSerializer(
        new_client(),
        json.dumps(RECORD_V1),
        conf={
            "auto.register.schemas": False,
            "use.latest.version": True,
            "schema.id.serializer": header_schema_id_serializer,
        },
    )
    headers = []
    context = SerializationContext("payments", MessageField.VALUE, headers)
    # (longer than the 5 bytes a framed payload has at least: the deserializer checks it)
    record = {"id": "payment-1", "amount": 12}
    data = serializer(record, context)
    # the schema is named only by its GUID, in the header (a 1 byte, then the 16 bytes)
    (name, value) = headers[0]
    assert name == "__value_schema_id" and value[:1] == b"\x01" and data[:1] != b"\x00"
    guid = str(uuid.UUID(bytes=value[1:17]))
    assert guid == new_client().get_latest_version("payments-value").guid
    # a new client knows no schema: the deserializer asks for the GUID's
    deserializer = AvroDeserializer(
        new_client(), conf={"schema.id.deserializer": dual_schema_id_deserializer}
    )
    assert (
        deserializer(data, SerializationContext("payments", MessageField.VALUE, headers)) == record
    )


@pytestmark_live
def test_a_schema_with_references_has_the_guid_of_its_string_and_references(live):
    new_client, http = live
    client = new_client()
    client.register_schema("address-value", avro(AVRO_ADDRESS))
    reference = SchemaReference("com.acme.Address", "address-value", 1)
    registered = client.register_schema_full_response(
        "orders-value", avro(AVRO_ORDER, references=[reference])
    )
    text = http.get("/subjects/orders-value/versions/1").json()["schema"]
    body = text.encode() + b"com.acme.Address" + b"address-value" + (1).to_bytes(4, "big")
    assert registered.guid == str(uuid.UUID(bytes=hashlib.md5(body).digest()))


@pytestmark_live
def test_an_id_from_before_guids_gets_its_guid_when_its_schema_is_registered_again(live):
    new_client, http = live
    first = new_client().register_schema_full_response("payments-value", avro(RECORD_V1))
    http.delete("/subjects/payments-value")
    http.delete("/subjects/payments-value", params={"permanent": "true"})
    # given: the id as migration 0024 leaves one no version has any more
    SchemaIdentity.objects.filter(pk=first.schema_id).update(guid=None)
    # when
    again = new_client().register_schema_full_response("payments-value", avro(RECORD_V1))
    # then: the same id, with its content's GUID, answered and kept
    assert (again.schema_id, again.guid) == (first.schema_id, first.guid)
    assert str(SchemaIdentity.objects.get(pk=first.schema_id).guid) == first.guid


@pytestmark_live
def test_an_imported_id_gets_the_guid_of_its_content_and_a_reused_one_the_new_contents(live):
    _, http = live
    topic = services.topic_create(actor=SYSTEM_ACTOR, name="migrated")
    schemas.set_registry_mode(actor=SYSTEM_ACTOR, topic=topic, role="value", mode="IMPORT")

    def imported(document, version: int) -> dict:
        body = {"schema": json.dumps(document), "id": 9101, "version": version}
        return http.post("/subjects/migrated-value/versions", json=body).json()

    first = imported(RECORD_V1, 1)
    assert first["guid"] == md5_guid(first["schema"])
    assert http.get("/schemas/guids/" + first["guid"] + "/ids").json() == [
        {"context": ".", "id": 9101}
    ]
    # given: every version with the id deleted permanently
    http.delete("/subjects/migrated-value/versions/1")
    http.delete("/subjects/migrated-value/versions/1", params={"permanent": "true"})
    # when: another schema is imported under it
    other = imported({**RECORD_V1, "name": "Refund"}, 1)
    # then: the id's GUID is the new content's; the old one names nothing
    assert other["guid"] == md5_guid(other["schema"]) != first["guid"]
    assert http.get("/schemas/guids/" + first["guid"]).json()["error_code"] == 40403
