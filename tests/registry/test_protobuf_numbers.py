"""Numbers in Protobuf text as the reference registry writes them (issue 38): a number in
an option value or a `default` kept as the file spelt it, as wire keeps a number's token
(OptionReader reads it as a word, ProtoParser.stripDefault keeps the default's text) and
ProtobufSchemaUtils writes it back; normalized as ProtobufSchemaUtils.formatNumber does
(commons-lang's NumberUtils.createNumber, then a DecimalFormat without grouping: at most
three decimals, rounded half-even). The value itself is the one protoc reads.

Every expected text below is the reference's answer, read off that code."""

import base64

import pytest
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass

from apps.registry.formats import InvalidSchema, protobuf
from tests.registry.test_protobuf_confluent import compiled, message_class

LIMITS = """syntax = "proto2";
package acme.limits;

option (acme.meta.ceiling) = 1e10;

message Limit {
  option (acme.meta.scale) = -.5;
  optional double cap = 1 [default = 1e10, (acme.rules).step = 0x10];
  optional int32 count = 2 [default = 0x10];
  optional int64 octal = 3 [default = 010];
  optional float ratio = 4 [default = 1.50];
  optional double low = 5 [default = -inf];
  optional double top = 6 [(acme.rules) = { min: -.5 max: 1e3 steps: [0x2, 010] }];
  oneof choice { option (acme.meta.weight) = 2.0005; string a = 7; string b = 8; }
}

enum Level {
  LOW = 0x0 [(acme.meta.rank) = 1E-3];
  HIGH = 0x1;
}

service Limits {
  option (acme.meta.rate) = 1.0;
  rpc Get (Limit) returns (Limit) { option (acme.meta.timeout) = 0.0025; };
}
"""

# Each number as written, wherever it is (an enum constant's number is an int to the
# reference, EnumConstantElement.tag: written as one)
CANONICAL = """syntax = "proto2";
package acme.limits;

option (acme.meta.ceiling) = 1e10;

message Limit {
  option (acme.meta.scale) = -.5;

  optional double cap = 1 [
    (acme.rules).step = 0x10,
    default = 1e10
  ];
  optional int32 count = 2 [default = 0x10];
  optional int64 octal = 3 [default = 010];
  optional float ratio = 4 [default = 1.50];
  optional double low = 5 [default = -inf];
  optional double top = 6 [(acme.rules) = {
    min: -.5,
    max: 1e3,
    steps: [
      0x2,
      010
    ]
  }];

  oneof choice {
    option (acme.meta.weight) = 2.0005;

    string a = 7;
    string b = 8;
  }
}
enum Level {
  LOW = 0 [(acme.meta.rank) = 1E-3];
  HIGH = 1;
}

service Limits {
  option (acme.meta.rate) = 1.0;

  rpc Get (Limit) returns (Limit) {
    option (acme.meta.timeout) = 0.0025;
  };
}
"""

# Normalized: 0x10 is 16 and 010 is 8 (createNumber reads them as Java does), 1e10 has
# no exponent, `2.0005` and `0.0025` are read as floats (their float writes as the same
# shortest decimal as their double) and so round to 2 and 0.002, `-inf` stays
NORMALIZED = """package acme.limits;

option (acme.meta.ceiling) = 10000000000;

message Limit {
  option (acme.meta.scale) = -0.5;

  optional double cap = 1 [
    (acme.rules).step = 16,
    default = 10000000000
  ];
  optional int32 count = 2 [default = 16];
  optional int64 octal = 3 [default = 8];
  optional float ratio = 4 [default = 1.5];
  optional double low = 5 [default = -inf];
  optional double top = 6 [(acme.rules) = {
    max: 1000,
    min: -0.5,
    steps: [
      2,
      8
    ]
  }];

  oneof choice {
    option (acme.meta.weight) = 2;

    string a = 7;
    string b = 8;
  }
}
enum Level {
  LOW = 0 [(acme.meta.rank) = 0.001];
  HIGH = 1;
}

service Limits {
  option (acme.meta.rate) = 1;

  rpc Get (.acme.limits.Limit) returns (.acme.limits.Limit) {
    option (acme.meta.timeout) = 0.002;
  };
}
"""


def test_a_number_is_written_as_the_file_spelt_it_and_normalized_as_the_reference_does():
    schema = protobuf.parse_schema(LIMITS)
    assert (schema.canonical, schema.normalized) == (CANONICAL, NORMALIZED)
    # the text answered reads back as the same schema, its numbers still as written
    again = protobuf.parse_schema(schema.canonical)
    assert (again.canonical, again.fingerprint) == (CANONICAL, schema.fingerprint)


@pytest.mark.parametrize(
    "written, normalized",
    [
        ("0x10", "16"),
        ("-0x10", "-16"),
        ("010", "8"),
        ("1e10", "10000000000"),
        ("1.50", "1.5"),
        ("-.5", "-0.5"),
        ("3.14159", "3.142"),
        ("2.0005", "2"),  # read as a float: 2.000499963…
        ("123456789.123", "123456789.123"),  # its float writes otherwise: a double
        ("1e20", "100000002004087734272"),  # the float 1e20 is, exactly
        ("-0.0", "-0"),
        ("-inf", "-inf"),
        ("nan", "nan"),
    ],
)
def test_an_option_value_is_normalized_as_the_reference_normalizes_it(written, normalized):
    schema = protobuf.parse_schema(f'syntax = "proto3";\noption (a.b) = {written};\n')
    assert f"option (a.b) = {written};" in schema.canonical
    assert f"option (a.b) = {normalized};" in schema.normalized


def test_the_value_is_the_one_protoc_reads():
    # the descriptor keeps values, as protoc does: `0x10` is the number 16 (never the
    # string "0x10"), `010` is 8, a default by its value
    resolved = protobuf.parse_schema(LIMITS)._resolved
    kept = resolved.options.uninterpreted_option[0]
    assert (kept.HasField("double_value"), kept.double_value) == (True, 1e10)
    fields = {f.name: f for f in resolved.message_type[0].field}
    step = fields["cap"].options.uninterpreted_option[0]
    assert (step.HasField("positive_int_value"), step.positive_int_value) == (True, 16)
    assert fields["count"].default_value == "16"
    assert fields["octal"].default_value == "8"
    assert fields["cap"].default_value == "10000000000"
    # the literal keeps its tokens, as protoc keeps an aggregate value's
    assert fields["top"].options.uninterpreted_option[0].aggregate_value == (
        "min: -.5 max: 1e3 steps: [0x2, 010]"
    )


@pytest.mark.parametrize(
    "text",
    [
        'syntax = "proto2";\nmessage M { optional int32 a = 1 [default = 1.5]; }\n',
        'syntax = "proto2";\nmessage M { optional int32 a = 1 [default = 1e3]; }\n',
        'syntax = "proto3";\noption (a) = 09;\n',
        'syntax = "proto3";\noption java_multiple_files = 1;\n',
        'syntax = "proto3";\noption (a) = 18446744073709551616;\n',  # past uint64
    ],
)
def test_a_number_protoc_refuses_is_an_invalid_schema(text):
    with pytest.raises(InvalidSchema):
        protobuf.parse_schema(text)


def test_a_descriptors_defaults_are_written_as_protoc_wrote_them(tmp_path):
    # a descriptor has no tokens: the reference writes the default_value strings protoc
    # put in it (ProtobufSchema.toField: fd.getDefaultValue()), so does Steward
    pool = compiled(tmp_path, {"limits.proto": _DEFAULTS})
    sent = base64.b64encode(pool.FindFileByName("limits.proto").serialized_pb).decode()
    schema = protobuf.parse_schema(sent)
    defaults = {f.name: f.default_value for f in schema._resolved.message_type[0].field}
    for name in ("cap", "huge", "count", "octal", "low"):
        assert f"default = {defaults[name]}," in schema.canonical
    assert defaults["huge"] == "1e+20"
    assert defaults["count"] == "16"
    # normalized, as the reference normalizes the same strings
    assert "default = 100000002004087734272" in schema.normalized
    assert "default = 1e+20" not in schema.normalized


_DEFAULTS = """syntax = "proto2";
package acme.limits;

message Limit {
  optional double cap = 1 [default = 1e10];
  optional double huge = 2 [default = 1e20];
  optional int32 count = 3 [default = 0x10];
  optional int64 octal = 4 [default = 010];
  optional double low = 5 [default = -inf];
}
"""


@pytest.mark.django_db(transaction=True)
def test_a_text_s_defaults_reach_the_clients_with_the_values_protoc_reads(live, tmp_path):
    # given: the file registered as text, its numbers spelt as the file spelt them (a
    # number protoc refuses first: the reference's invalid-schema answer, nothing kept)
    new_client, http = live
    bad = _DEFAULTS.replace("default = 0x10", "default = 1.5")
    refused = http.post(
        "/subjects/limits-value/versions", json={"schemaType": "PROTOBUF", "schema": bad}
    )
    assert (refused.status_code, refused.json()["error_code"]) == (422, 42201)
    assert http.get("/subjects/limits-value/versions").status_code == 404
    body = {"schemaType": "PROTOBUF", "schema": _DEFAULTS}
    first = http.post("/subjects/limits-value/versions", json=body).json()["id"]
    served = http.get("/subjects/limits-value/versions/1").json()["schema"]
    assert "  optional double huge = 2 [default = 1e20];\n" in served
    assert "  optional int32 count = 3 [default = 0x10];\n" in served
    # when: the serialized form a deserializer builds the writer's classes from
    encoded = http.get(f"/schemas/ids/{first}", params={"format": "serialized"}).json()
    pool = descriptor_pool.DescriptorPool()
    pool.Add(descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(encoded["schema"])))
    empty = GetMessageClass(pool.FindMessageTypeByName("acme.limits.Limit"))()
    # then: its defaults are the values protoc gives the file (010 is 8)
    assert (empty.cap, empty.huge, empty.count, empty.octal) == (1e10, 1e20, 16, 8)
    assert empty.low == float("-inf")
    # and a producer whose class protoc compiled writes with that version, which the
    # consumer reads back, its unset fields at their defaults
    limit = message_class(compiled(tmp_path, {"limits.proto": _DEFAULTS}), "acme.limits.Limit")
    context = SerializationContext("limits", MessageField.VALUE)
    conf = {"auto.register.schemas": False, "use.latest.version": True}
    data = ProtobufSerializer(limit, new_client(), conf)(limit(cap=2.5), context)
    assert int.from_bytes(data[1:5], "big") == first
    read = ProtobufDeserializer(limit, {}, new_client())(data, context)
    assert (read.cap, read.count, read.octal) == (2.5, 16, 8)


@pytest.mark.django_db(transaction=True)
def test_the_serializer_registers_protocs_defaults_and_they_are_answered_as_it_wrote_them(
    live, tmp_path
):
    # given: a producer's class protoc compiled (its descriptor carries protoc's
    # default_value strings and every field's json_name)
    new_client, http = live
    limit = message_class(compiled(tmp_path, {"limits.proto": _DEFAULTS}), "acme.limits.Limit")
    context = SerializationContext("limit-events", MessageField.VALUE)
    # when: the serializer registers it and writes a message
    data = ProtobufSerializer(limit, new_client())(limit(count=3), context)
    # then: the subject's text writes the defaults as the descriptor has them, as the
    # reference does
    served = http.get("/subjects/limit-events-value/versions/latest").json()["schema"]
    assert '  optional double huge = 2 [\n    default = 1e+20,\n    json_name = "huge"\n  ];' in (
        served
    )
    assert '  optional int32 count = 3 [\n    default = 16,\n    json_name = "count"\n  ];' in (
        served
    )
    # ... the deserializer reads the message back, and the serializer finds its schema
    # again as the same version
    read = ProtobufDeserializer(limit, {}, new_client())(data, context)
    assert (read.count, read.huge) == (3, 1e20)
    ProtobufSerializer(limit, new_client())(limit(count=4), context)
    assert http.get("/subjects/limit-events-value/versions").json() == [1]
