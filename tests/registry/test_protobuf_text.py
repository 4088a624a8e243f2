"""Protobuf text as the reference registry writes it (issue 38, gaps 3 and 4): custom
options kept in the stored and answered text and ignored by compatibility, and the
canonical and normalized layouts of the reference's documented rules, checked with
schemas of our own."""

import base64

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2

from apps.registry import formats
from apps.registry.formats import protobuf
from tests.registry.test_protobuf_confluent import compiled, message_class

SHIPMENT = """
// a shipment as the warehouse sends it
syntax = "proto3";
package acme.ship;

import public "units.proto";
import "google/protobuf/timestamp.proto";

option (acme.meta.owner) = "warehouse";
option java_package = "com.acme.ship";

service Tracking {
  rpc Track (Shipment) returns (stream Shipment) { option deprecated = true; };
}

enum Carrier { option allow_alias = true; reserved 9; POST = 0; MAIL = 0; VAN = 2; }

message Shipment {
  string code = 2 [(acme.rules).max_len = 12, deprecated = true, json_name = "ref"];
  int64 weight = 1 [(acme.rules).range = { min: 1 max: 5000 units: ["g", "kg"] }];
  map<string, Parcel> parcels = 3;
  oneof to { string locker = 9; string address = 8; }
  oneof when { google.protobuf.Timestamp at = 5; }
  reserved 20 to max, 15, 11 to 12;
  reserved "old";
  option (acme.meta.kind) = EVENT;
  message Parcel {}
}
message Ack {}
"""
UNITS = 'syntax = "proto3";\npackage acme.ship;\n\nmessage Unit {\n  string name = 1;\n}\n'

CANONICAL = """syntax = "proto3";
package acme.ship;

import "google/protobuf/timestamp.proto";
import public "units.proto";

option (acme.meta.owner) = "warehouse";
option java_package = "com.acme.ship";

message Shipment {
  reserved 20 to max, 15, 11 to 12;
  reserved "old";

  option (acme.meta.kind) = EVENT;

  string code = 2 [
    (acme.rules).max_len = 12,
    deprecated = true,
    json_name = "ref"
  ];
  int64 weight = 1 [(acme.rules).range = {
    min: 1,
    max: 5000,
    units: [
      "g",
      "kg"
    ]
  }];
  map<string, Parcel> parcels = 3;

  oneof to {
    string locker = 9;
    string address = 8;
  }
  oneof when {
    google.protobuf.Timestamp at = 5;
  }

  message Parcel {}
}
message Ack {}
enum Carrier {
  reserved 9;
  option allow_alias = true;
  POST = 0;
  MAIL = 0;
  VAN = 2;
}

service Tracking {
  rpc Track (Shipment) returns (stream Shipment) {
    option deprecated = true;
  };
}
"""

NORMALIZED = """syntax = "proto3";
package acme.ship;

import "google/protobuf/timestamp.proto";
import public "units.proto";

option (acme.meta.owner) = "warehouse";
option java_package = "com.acme.ship";

message Shipment {
  reserved 11 to 12;
  reserved 15;
  reserved 20 to max;
  reserved "old";

  option (acme.meta.kind) = EVENT;

  int64 weight = 1 [(acme.rules).range = {
    max: 5000,
    min: 1,
    units: [
      "g",
      "kg"
    ]
  }];
  string code = 2 [
    (acme.rules).max_len = 12,
    deprecated = true,
    json_name = "ref"
  ];
  map<string, .acme.ship.Shipment.Parcel> parcels = 3;

  oneof when {
    .google.protobuf.Timestamp at = 5;
  }
  oneof to {
    string address = 8;
    string locker = 9;
  }

  message Parcel {}
}
message Ack {}
enum Carrier {
  reserved 9;
  option allow_alias = true;
  MAIL = 0;
  POST = 0;
  VAN = 2;
}

service Tracking {
  rpc Track (.acme.ship.Shipment) returns (stream .acme.ship.Shipment) {
    option deprecated = true;
  };
}
"""


def parsed(text=SHIPMENT, **kwargs):
    return protobuf.parse_schema(text, {"units.proto": UNITS, **kwargs})


def test_the_canonical_text_keeps_custom_options_in_the_reference_layout():
    schema = parsed()
    # comments and spacing gone; imports, options, then every message before every enum
    # with no blank line between types, services last; an empty message `{}`; a field's
    # options one a line when it has several (json_name after the others)
    assert schema.canonical == CANONICAL
    # and the text is a schema that reads back as itself
    assert parsed(schema.canonical).canonical == CANONICAL
    assert parsed(schema.canonical).fingerprint == schema.fingerprint


def test_the_normalized_text_is_the_references_normalize():
    # imports and options sorted (a custom option by its name without parentheses),
    # fields by number, oneofs by their first field's number, enum constants by number,
    # each reserved value on its own line, every type named in full
    assert parsed().normalized == NORMALIZED


def test_a_schema_written_otherwise_is_the_same_schema_and_an_option_value_is_not():
    respelt = (
        SHIPMENT.replace("// a shipment as the warehouse sends it\n", "")
        .replace(
            "oneof to { string locker = 9; string address = 8; }",
            "oneof to {\n  string address = 8;\n  string locker = 9;\n}",
        )
        .replace("POST = 0; MAIL = 0;", "MAIL = 0; POST = 0;")
        .replace(
            'option (acme.meta.owner) = "warehouse";\noption java_package = "com.acme.ship";',
            'option java_package = "com.acme.ship";\noption (acme.meta.owner) = "warehouse";',
        )
        .replace("reserved 20 to max, 15, 11 to 12;", "reserved 11 to 12, 15, 20 to max;")
    )
    assert respelt != SHIPMENT
    assert parsed(respelt).fingerprint == parsed().fingerprint
    # the reference keeps an option's value in the schema's text: another value is
    # another schema
    other = SHIPMENT.replace("max_len = 12", "max_len = 16")
    assert parsed(other).fingerprint != parsed().fingerprint


def test_options_change_nothing_in_a_compatibility_verdict():
    other = SHIPMENT.replace("max_len = 12", "max_len = 16").replace(
        "option (acme.meta.kind) = EVENT;", ""
    )
    for mode in ("FULL_TRANSITIVE", "BACKWARD"):
        verdict = protobuf.check(parsed(other), [parsed().document], mode=mode)
        assert verdict.compatible and not verdict.differences, verdict


def test_a_proto2_file_without_syntax_is_written_without_one_and_normalized_without_it():
    declared = formats.parse("PROTOBUF", 'syntax = "proto2";\nmessage A { optional int32 a = 1; }')
    bare = formats.parse("PROTOBUF", "message A { optional int32 a = 1; }")
    assert declared.text.startswith('syntax = "proto2";\n\nmessage A {')
    assert bare.text == "\nmessage A {\n  optional int32 a = 1;\n}\n"
    assert declared.fingerprint == bare.fingerprint
    normalized = formats.parse("PROTOBUF", 'syntax = "proto2";\nmessage A {}', normalize=True)
    assert normalized.text == "\nmessage A {}\n"


def test_string_options_are_read_and_written_with_their_escapes():
    text = 'syntax = "proto3";\noption (a.b) = "say \\"hi\\"\\n";\nmessage M {}\n'
    schema = protobuf.parse_schema(text)
    assert 'option (a.b) = "say \\"hi\\"\\n";' in schema.canonical
    assert protobuf.parse_schema(schema.canonical).fingerprint == schema.fingerprint


# --------------------------------------------------------------------------- through the API


@pytest.mark.django_db(transaction=True)
def test_custom_options_are_kept_through_the_schema_registry_api(live):
    new_client, http = live
    client = new_client()
    units = client.register_schema("units.proto", Schema(UNITS, "PROTOBUF"))
    assert units > 0
    reference = [{"name": "units.proto", "subject": "units.proto", "version": 1}]
    body = {"schemaType": "PROTOBUF", "schema": SHIPMENT, "references": reference}
    first = http.post("/subjects/shipments-value/versions", json=body).json()["id"]
    # answered with its options, as the reference keeps them
    served = http.get("/subjects/shipments-value/versions/1").json()
    assert served["schema"] == CANONICAL
    # the serialized descriptor keeps them too, as options protoc has not interpreted
    encoded = http.get(f"/schemas/ids/{first}", params={"format": "serialized"}).json()
    descriptor = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(encoded["schema"]))
    kept = descriptor.message_type[0].field[0].options.uninterpreted_option
    assert [[p.name_part for p in o.name] for o in kept] == [["acme.rules", "max_len"]]
    # the same schema with its options in another order is the same id
    respelt = SHIPMENT.replace(
        'option (acme.meta.owner) = "warehouse";\noption java_package = "com.acme.ship";',
        'option java_package = "com.acme.ship";\noption (acme.meta.owner) = "warehouse";',
    )
    again = http.post("/subjects/shipments-value/versions", json={**body, "schema": respelt})
    assert again.json()["id"] == first
    # another option value: compatible (options are not judged), a new version
    changed = {**body, "schema": SHIPMENT.replace("max_len = 12", "max_len = 16")}
    check = http.post("/compatibility/subjects/shipments-value/versions/latest", json=changed)
    assert check.json()["is_compatible"] is True
    assert http.post("/subjects/shipments-value/versions", json=changed).json()["id"] != first
    assert http.get("/subjects/shipments-value/versions").json() == [1, 2]
    # normalize=true keeps the reference's normalized text for the subject's version (the
    # id is the one the same schema has already: Steward's identity is normalized anyway)
    normalized = http.post(
        "/subjects/normalized-value/versions", params={"normalize": "true"}, json=body
    ).json()
    assert normalized["id"] == first
    assert http.get("/subjects/normalized-value/versions/1").json()["schema"] == NORMALIZED


@pytest.mark.django_db(transaction=True)
def test_clients_write_and_read_with_a_schema_whose_options_they_do_not_know(live, tmp_path):
    # given: the schema registered with its custom options (tooling, as text), and a
    # producer whose class protoc compiled from the same file without them
    new_client, http = live
    with_options = (
        'syntax = "proto3";\npackage acme.ship;\n\n'
        "message Parcel {\n  option (acme.meta.kind) = EVENT;\n\n"
        "  string code = 1 [(acme.rules).max_len = 12];\n  int64 grams = 2;\n}\n"
    )
    plain = 'syntax = "proto3";\npackage acme.ship;\n'
    plain += "message Parcel {\n  string code = 1;\n  int64 grams = 2;\n}\n"
    registered = http.post(
        "/subjects/parcels-value/versions", json={"schemaType": "PROTOBUF", "schema": with_options}
    ).json()["id"]
    parcel = message_class(compiled(tmp_path, {"parcel.proto": plain}), "acme.ship.Parcel")
    context = SerializationContext("parcels", MessageField.VALUE)
    # when: the serializer writes with the subject's latest version
    conf = {"auto.register.schemas": False, "use.latest.version": True}
    data = ProtobufSerializer(parcel, new_client(), conf)(parcel(code="p-1", grams=5), context)
    # then: with its id, and the deserializer builds the writer's descriptor, options and
    # all, from the registry's serialized form and reads the message back
    assert int.from_bytes(data[1:5], "big") == registered
    read = ProtobufDeserializer(parcel, {}, new_client())(data, context)
    assert (read.code, read.grams) == ("p-1", 5)
