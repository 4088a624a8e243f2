"""Protobuf end to end (issue 38, part 2): confluent-kafka's unmodified ProtobufSerializer
and ProtobufDeserializer through Steward's Schema Registry API (message indexes, imports
registered as references, `format=serialized`), and a release's ModelSync, the gate and
declared reader schemas for Protobuf as for Avro. The message classes are compiled at
test time by protoc (grpcio-tools), never by Steward's own parser."""

import uuid
from pathlib import Path

import grpc_tools
import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass
from grpc_tools import protoc
from rest_framework.test import APIClient

from apps.core.context import SYSTEM_ACTOR
from apps.registry import versions as schemas
from apps.registry.codes import RegistryCode
from apps.registry.models import SchemaVersion, Service
from tests.conftest import bearer
from tests.factories import service_token
from tests.registry.factories import consumer, outcome, pending

MONEY = """syntax = "proto3";
package acme.common;

message Money {
  int64 cents = 1;
  string currency = 2;
}
"""
ORDER = """syntax = "proto3";
package acme.orders;

import "money.proto";

message Order {
  string id = 1;
  acme.common.Money total = 2;
  repeated string lines = 3;
}

message Refund {
  string order_id = 1;
  acme.common.Money amount = 2;
  message Reason {
    string text = 1;
  }
  Reason reason = 3;
}
"""


def compiled(tmp_path, files: dict[str, str]) -> descriptor_pool.DescriptorPool:
    """The files compiled by protoc into a pool of their own (a fresh pool each time, so
    tests never share generated types)."""
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    out = tmp_path / "set.pb"
    shipped = Path(grpc_tools.__file__).parent / "_proto"  # google/protobuf/*.proto
    status = protoc.main(
        [
            "protoc",
            f"-I{tmp_path}",
            f"-I{shipped}",
            f"--descriptor_set_out={out}",
            "--include_imports",
            *files,
        ]
    )
    assert status == 0, "protoc refused the test's .proto files"
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes()).file:
        pool.Add(file)
    return pool


def message_class(pool, name):
    return GetMessageClass(pool.FindMessageTypeByName(name))


# --------------------------------------------------------------------------- the serializers


@pytest.mark.django_db(transaction=True)
def test_the_serializers_round_trip_messages_with_imports_and_message_indexes(live, tmp_path):
    # given classes protoc made from a file that imports another
    pool = compiled(tmp_path, {"money.proto": MONEY, "order.proto": ORDER})
    order_class = message_class(pool, "acme.orders.Order")
    reason_class = message_class(pool, "acme.orders.Refund.Reason")
    new_client, http = live
    serialize = ProtobufSerializer(order_class, new_client())
    context = SerializationContext("orders", MessageField.VALUE)
    sent = order_class(id="o-1", lines=["a", "b"])
    sent.total.cents, sent.total.currency = 1250, "EUR"
    # when the serializer writes it: the import registered as a reference first
    data = serialize(sent, context)
    # then the framing is the reference's: magic byte, schema id, message indexes ([0])
    registered = http.get("/subjects/orders-value/versions/latest").json()
    assert data[0] == 0 and int.from_bytes(data[1:5], "big") == registered["id"]
    assert data[5] == 0  # a single 0: the first message of the file
    assert registered["schemaType"] == "PROTOBUF"
    assert registered["references"] == [
        {"name": "money.proto", "subject": "money.proto", "version": 1}
    ]
    # the schema is answered as .proto text, its import kept
    assert 'import "money.proto";' in registered["schema"]
    assert "message Refund {" in registered["schema"]
    # and the deserializer, asking the registry for the writer's schema, reads it back
    deserialize = ProtobufDeserializer(order_class, {}, new_client())
    assert deserialize(data, context) == sent
    # a nested message of the second message: message indexes [1, 0]
    nested = ProtobufSerializer(reason_class, new_client())(reason_class(text="late"), context)
    assert nested[5:8] == bytes([4, 2, 0])  # zigzag varints: two indexes, 1 then 0
    assert ProtobufDeserializer(reason_class, {}, new_client())(nested, context).text == "late"
    # the same file from the second serializer is the same version, not a new one
    assert http.get("/subjects/orders-value/versions").json() == [1]


@pytest.mark.django_db(transaction=True)
def test_the_serialized_format_is_the_descriptor_the_deserializer_builds(live, tmp_path):
    new_client, http = live
    client = new_client()
    money_id = client.register_schema("money.proto", Schema(MONEY, "PROTOBUF"))
    text = http.get(f"/schemas/ids/{money_id}").json()
    serialized = http.get(f"/schemas/ids/{money_id}", params={"format": "serialized"}).json()
    assert text["schema"] == MONEY  # already in the reference's layout
    descriptor = descriptor_pb2.FileDescriptorProto.FromString(
        __import__("base64").b64decode(serialized["schema"])
    )
    assert descriptor.package == "acme.common"
    assert [f.name for f in descriptor.message_type[0].field] == ["cents", "currency"]
    # registered again as that descriptor, it is the same schema: the same id and version
    again = client.register_schema("money.proto", Schema(serialized["schema"], "PROTOBUF"))
    assert again == money_id
    assert client.get_versions("money.proto") == [1]


@pytest.mark.django_db(transaction=True)
def test_the_registry_judges_protobuf_changes_by_the_reference_s_rules(live):
    new_client, http = live
    client = new_client()
    client.register_schema("money.proto", Schema(MONEY, "PROTOBUF"))
    added = MONEY.replace("string currency = 2;", "string currency = 2;\n  string note = 3;")
    retyped = MONEY.replace("int64 cents = 1;", "double cents = 1;")
    assert client.test_compatibility("money.proto", Schema(added, "PROTOBUF")) is True
    assert client.test_compatibility("money.proto", Schema(retyped, "PROTOBUF")) is False
    answer = http.post(
        "/compatibility/subjects/money.proto/versions/latest",
        params={"verbose": "true"},
        json={"schema": retyped, "schemaType": "PROTOBUF"},
    ).json()
    assert answer["is_compatible"] is False
    assert "FIELD_SCALAR_KIND_CHANGED" in " ".join(answer["messages"])
    # a schema that is not a .proto file is the reference's 42201
    bad = http.post(
        "/subjects/money.proto/versions", json={"schema": "message {", "schemaType": "PROTOBUF"}
    )
    assert (bad.status_code, bad.json()["error_code"]) == (422, 42201)
    # and the type is listed among those the registry keeps
    assert "PROTOBUF" in http.get("/schemas/types").json()


# --------------------------------------------------------------------------- ModelSync and the gate

TOPIC = "payments.payment"
V1 = 'syntax = "proto3";\npackage acme.pay;\n\nmessage Payment {\n  string id = 1;\n}\n'
V2_BREAKING = V1.replace("string id = 1;", "int64 id = 1;")
# a reader that never reads field 1 reads what V2 writes
TOLERANT = V1.replace("string id = 1;", "string note = 2;")


def release(name, schema, *, consumers=("alpha", "bravo")):
    producer = Service.objects.get_or_create(name="payments")[0]
    topics = [
        {"name": TOPIC, "consumers": list(consumers), "schema": schema, "schema_type": "PROTOBUF"}
    ]
    return schemas.model_sync(actor=SYSTEM_ACTOR, service=producer, release=name, topics=topics)


def declare(name, reader):
    service = Service.objects.get_or_create(name=name)[0]
    reads = [{"topic": TOPIC, "schema": reader, "schema_type": "PROTOBUF"}]
    answer = schemas.model_sync(
        actor=SYSTEM_ACTOR,
        service=service,
        release=f"{name}-{uuid.uuid4().hex[:6]}",
        topics=[],
        reads=reads,
    )
    return answer["reads"][0]


@pytest.mark.django_db
def test_a_breaking_protobuf_release_waits_for_the_consumers_whose_reader_cannot_read_it():
    # given v1 published, and alpha's declared reader that reads v2 whatever field 1 is
    assert outcome(release("r1", V1), TOPIC)["outcome"] == "published"
    assert declare("alpha", TOLERANT)["outcome"] == "declared"
    # when a release changes field 1's type
    answer = outcome(release("r2", V2_BREAKING), TOPIC)
    # then it waits for bravo only, with the reference's explanation
    assert answer["outcome"] == "awaiting_acknowledgement"
    assert answer["awaiting"] == ["bravo"] and answer["reads_it"] == ["alpha"]
    version = pending()
    assert version.schema_type == "PROTOBUF"
    assert {d["kind"] for d in version.verdict["breaking"]} == {"FIELD_SCALAR_KIND_CHANGED"}
    # the same release again is the same answer, not a new version
    assert outcome(release("r2", V2_BREAKING), TOPIC)["version"] == version.version
    # and once bravo acknowledges it is published
    done = schemas.acknowledge(actor=SYSTEM_ACTOR, version=version, consumer=consumer("bravo"))
    assert done.state == "published"
    assert SchemaVersion.objects.get(topic__name=TOPIC, version=2).text.startswith('syntax = "')


@pytest.mark.django_db
def test_a_compatible_protobuf_release_is_published_and_a_reformatted_one_is_unchanged():
    release("r1", V1)
    added = V1.replace("string id = 1;", "string id = 1;\n  string note = 2;")
    assert outcome(release("r2", added), TOPIC)["outcome"] == "published"
    respaced = added.replace("\n  ", "\n        ").replace(
        "package acme.pay;", "package acme.pay ;"
    )
    assert outcome(release("r3", respaced), TOPIC)["outcome"] == "unchanged"


@pytest.mark.django_db
def test_a_protobuf_reader_that_is_not_a_proto_file_is_refused():
    release("r1", V1)
    answer = declare("alpha", {"type": "object"})
    assert (answer["outcome"], answer["code"]) == ("rejected", RegistryCode.INVALID_READER_SCHEMA)
    assert ".proto" in answer["reason"]


# --------------------------------------------------------------------------- the console


@pytest.mark.django_db
def test_the_console_shows_a_protobuf_version_as_its_text_beside_the_one_before(client, operator):
    release("r1", V1)
    release("r2", V2_BREAKING)
    version = pending()
    client.force_login(operator)
    page = client.get(version.get_absolute_url())
    text = page.content.decode()
    assert "Protobuf · Awaiting acknowledgement" in text
    assert "FIELD_SCALAR_KIND_CHANGED" in text
    # the two files line by line, not as JSON strings; only the changed field marked
    lines = page.context["lines"]
    assert ("  string id = 1;", "  int64 id = 1;", True) in lines
    assert ("message Payment {", "message Payment {", False) in lines
    listed = client.get("/registry/versions/").content.decode()
    assert "<th" in listed and "Type" in listed and "Protobuf" in listed


# --------------------------------------------------------------------------- imports in a release

SYNC_URL = "/api/v1/registry/model-sync/"


@pytest.mark.django_db(transaction=True)
def test_a_release_s_protobuf_schema_imports_another_subject_and_clients_read_it(live, tmp_path):
    new_client, http = live
    client = bearer(
        APIClient(), service_token(scopes=["registry:read", "registry:write"], name="shop")
    )

    def model_sync(name, *topics):
        answer = client.post(SYNC_URL, {"release": name, "topics": list(topics)}, format="json")
        assert answer.status_code == 200, answer.content
        return answer.json()["topics"]

    # given the money file published as acme.money's payload
    [money] = model_sync("m1", {"name": "acme.money", "schema_type": "PROTOBUF", "schema": MONEY})
    assert money["outcome"] == "published"
    # when a release's Order schema imports it through a reference
    reference = {"name": "money.proto", "subject": "acme.money-value", "version": 1}
    entry = {
        "name": "orders",
        "schema_type": "PROTOBUF",
        "schema": ORDER,
        "references": [reference],
    }
    [order] = model_sync("o1", entry)
    # then it is published with its reference, and served with it
    assert (order["outcome"], order["references"]) == ("published", [reference])
    served = http.get("/subjects/orders-value/versions/latest").json()
    assert served["references"] == [reference]
    # the same schema in the next release is the same version
    again = model_sync("o1-next", entry)[0]
    assert (again["outcome"], again["version"]) == ("unchanged", 1)
    # and confluent-kafka's deserializer reads what protoc's classes write with that id
    pool = compiled(tmp_path, {"money.proto": MONEY, "order.proto": ORDER})
    order_class = message_class(pool, "acme.orders.Order")
    sent = order_class(id="o-9")
    sent.total.cents = 5
    framed = b"\x00" + served["id"].to_bytes(4, "big") + b"\x00" + sent.SerializeToString()
    context = SerializationContext("orders", MessageField.VALUE)
    assert ProtobufDeserializer(order_class, {}, new_client())(framed, context) == sent
    # a release whose import no reference names is rejected, naming it
    [refused] = model_sync("o2", {**entry, "references": []})
    assert refused["outcome"] == "rejected" and "money.proto" in refused["reason"]
