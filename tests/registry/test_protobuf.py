"""Protobuf as a schema type (issue 38, part 2): .proto files parsed (proto2 and proto3,
as text or as a serialized descriptor), written as the reference registry writes them,
the same schema known however it is spelt, and judged by the reference's compatibility
rules at every level."""

import base64

import pytest
from google.protobuf import descriptor_pb2

from apps.registry import formats
from apps.registry.formats import protobuf

ORDER = """
syntax = "proto3";
package acme.orders;

// what a customer bought
message Order {
  string id = 1;
  int64 amount = 2;
  repeated string lines = 3;
  map<string, int32> counts = 4;
  Status status = 5;
  oneof payment {
    string card = 6;
    string iban = 7;
  }
  optional string note = 8;
  reserved 9, 20 to 30;
  reserved "legacy";

  enum Status {
    NEW = 0;
    PAID = 1;
  }
}
"""

CANONICAL = """syntax = "proto3";
package acme.orders;

message Order {
  reserved 9, 20 to 30;
  reserved "legacy";

  string id = 1;
  int64 amount = 2;
  repeated string lines = 3;
  map<string, int32> counts = 4;
  Status status = 5;
  optional string note = 8;

  oneof payment {
    string card = 6;
    string iban = 7;
  }

  enum Status {
    NEW = 0;
    PAID = 1;
  }
}
"""


def order(body: str, *, package="acme.orders", syntax="proto3", extra="") -> str:
    return f'syntax = "{syntax}";\npackage {package};\n{extra}\nmessage Order {{\n{body}\n}}\n'


# --------------------------------------------------------------------------- parsing


def test_a_proto3_file_is_written_as_the_reference_writes_it():
    parsed = formats.parse("PROTOBUF", ORDER)
    assert parsed.canonical == CANONICAL
    assert parsed.text == CANONICAL
    assert parsed.document == CANONICAL  # kept as text, not as JSON


def test_the_same_schema_spelt_otherwise_is_the_same_schema():
    # given the file with other spacing, no comment, options and types written otherwise
    respelt = ORDER.replace("\n  ", "\n      ").replace("// what a customer bought\n", "")
    respelt = respelt.replace("Status status = 5;", "acme.orders.Order.Status status = 5;")
    first, second = formats.parse("PROTOBUF", ORDER), formats.parse("PROTOBUF", respelt)
    assert first.fingerprint == second.fingerprint
    # and sent as the base64 of its descriptor, as confluent-kafka's serializer sends it
    sent = protobuf.parse_schema(ORDER).serialized()
    assert formats.parse("PROTOBUF", sent).fingerprint == first.fingerprint
    # while a real change is another schema
    changed = ORDER.replace("int64 amount = 2;", "int64 amount = 2;\n  bool gift = 10;")
    assert formats.parse("PROTOBUF", changed).fingerprint != first.fingerprint


def test_the_normalized_text_names_every_type_in_full():
    parsed = formats.parse("PROTOBUF", ORDER, normalize=True)
    assert ".acme.orders.Order.Status status = 5;" in parsed.text
    assert parsed.canonical == CANONICAL  # the identity text is unchanged


def test_a_proto2_file_keeps_its_labels_defaults_groups_and_extension_ranges():
    text = """
    syntax = "proto2";
    message Legacy {
      required int32 id = 1;
      optional string name = 2 [default = "anon"];
      repeated group Item = 3 { optional int32 sku = 1; }
      extensions 100 to max;
    }
    """
    parsed = formats.parse("PROTOBUF", text)
    assert parsed.text == (
        'syntax = "proto2";\n\nmessage Legacy {\n  required int32 id = 1;\n'
        '  optional string name = 2 [default = "anon"];\n\n  repeated group Item = 3 {\n'
        "    optional int32 sku = 1;\n  }\n\n  extensions 100 to max;\n}\n"
    )
    assert formats.parse("PROTOBUF", parsed.text).fingerprint == parsed.fingerprint


def test_a_well_known_type_is_imported_without_a_reference():
    text = order(
        "google.protobuf.Timestamp at = 1;", extra='import "google/protobuf/timestamp.proto";'
    )
    parsed = formats.parse("PROTOBUF", text)
    assert 'import "google/protobuf/timestamp.proto";' in parsed.text
    assert parsed.document == parsed.canonical  # nothing of its own to carry


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("message {", "not a .proto file"),
        (order("Unknown thing = 1;"), "couldn't resolve name 'Unknown'"),
        (order("int32 a = 1;\n  int32 b = 1;"), "number"),
        (order("required int32 a = 1;"), "required fields are proto2 only"),
        (order("int32 a = 1;", syntax="proto2"), "needs a label"),
        (order("int32 a = 1;", extra='import "other.proto";'), "not one of the schema's refer"),
        ('edition = "2023";\nmessage M {}', "editions"),
        (order("int32 a = 1 [no_such_option = true];"), "unknown option"),
        ("AAAA+w==", "not a .proto file"),  # base64, of no descriptor
        (order("int32 a = 9999999999;"), "out of range"),
        (order("reserved 5 to 99999999999;"), "out of range"),
    ],
)
def test_a_schema_protoc_would_refuse_is_invalid(text, reason):
    with pytest.raises(formats.InvalidSchema) as refused:
        formats.parse("PROTOBUF", text)
    assert reason in refused.value.reason


def test_an_import_is_resolved_through_the_schema_s_references_and_carried_with_it():
    common = 'syntax = "proto3";\npackage acme.common;\nmessage Money { int64 cents = 1; }\n'
    text = order("acme.common.Money total = 1;", extra='import "acme/common.proto";')
    files = {"acme/common.proto": formats.parse("PROTOBUF", common).document}
    parsed = protobuf.parse_schema(text, files)
    assert parsed.document == {
        "schema": parsed.canonical,
        "dependencies": {"acme/common.proto": files["acme/common.proto"]},
    }
    # the stored document stands alone: it is judged again without the references' rows
    again = protobuf.parse_schema(parsed.document)
    assert again.fingerprint == parsed.fingerprint
    # the serialized form names the import, as the deserializer adds it to its pool
    descriptor = descriptor_pb2.FileDescriptorProto.FromString(
        base64.b64decode(parsed.serialized())
    )
    assert list(descriptor.dependency) == ["acme/common.proto"]
    assert descriptor.message_type[0].field[0].type_name == ".acme.common.Money"


# --------------------------------------------------------------------------- compatibility

BASE = order(
    "string id = 1;\n  int64 amount = 2;\n  Kind kind = 3;\n  reserved 4;\n"
    "  enum Kind {\n    A = 0;\n    B = 1;\n  }"
)


def verdict(old, new, mode="BACKWARD"):
    return formats.check(
        "PROTOBUF", formats.parse("PROTOBUF", new).checked, [old], mode=mode, policy="STRICT"
    )


def kinds(result):
    return {d.kind for d in result.breaking}


def changed(replace, by):
    assert replace in BASE
    return BASE.replace(replace, by)


@pytest.mark.parametrize(
    ("new", "compatible", "breaking"),
    [
        (changed("int64 amount = 2;", "int64 amount = 2;\n  string note = 5;"), True, set()),
        (changed("int64 amount = 2;", ""), True, set()),  # removed: its number reads as unknown
        (changed("string id = 1;", "string ident = 1;"), True, set()),  # names are not on the wire
        (changed("int64 amount = 2;", "int32 amount = 2;"), True, set()),  # the same varint group
        (changed("int64 amount = 2;", "bool amount = 2;"), True, set()),
        (changed("int64 amount = 2;", "uint64 amount = 2;"), True, set()),
        (changed("Kind kind = 3;", "int32 kind = 3;"), True, set()),  # an enum is a varint
        (changed("string id = 1;", "bytes id = 1;"), True, set()),
        (changed("int64 amount = 2;", "sint64 amount = 2;"), False, {"FIELD_SCALAR_KIND_CHANGED"}),
        (changed("int64 amount = 2;", "fixed64 amount = 2;"), False, {"FIELD_SCALAR_KIND_CHANGED"}),
        (changed("int64 amount = 2;", "double amount = 2;"), False, {"FIELD_SCALAR_KIND_CHANGED"}),
        (changed("string id = 1;", "int32 id = 1;"), False, {"FIELD_SCALAR_KIND_CHANGED"}),
        (changed("string id = 1;", "Order id = 1;"), False, {"FIELD_KIND_CHANGED"}),
        (changed("string id = 1;", "map<string, string> id = 1;"), False, {"FIELD_KIND_CHANGED"}),
        (changed("int64 amount = 2;", "optional int64 amount = 2;"), True, set()),
        (changed("  reserved 4;", "  int32 again = 4;"), False, {"RESERVED_NUMBER_USED"}),
        (changed("B = 1;", "B = 1;\n    C = 2;"), True, set()),
        (changed("B = 1;", "BEE = 1;"), True, set()),
        (changed("    B = 1;\n", ""), True, set()),
        (BASE.replace("acme.orders", "acme.sales"), False, {"PACKAGE_CHANGED"}),
        (BASE.replace("message Order", "message Purchase"), False, {"MESSAGE_REMOVED"}),
        (
            BASE.replace('syntax = "proto3"', 'syntax = "proto2"')
            .replace("string id", "optional string id")
            .replace("int64 amount", "optional int64 amount")
            .replace("Kind kind", "optional Kind kind"),
            True,
            set(),
        ),
    ],
    ids=lambda value: value if isinstance(value, bool) else None,
)
def test_backward_follows_the_reference_s_protobuf_rules(new, compatible, breaking):
    result = verdict(BASE, new)
    assert result.compatible is compatible, result.breaking
    assert kinds(result) == breaking


def test_a_label_counts_where_both_schemas_write_one():
    optional = changed("int64 amount = 2;", "optional int64 amount = 2;")
    repeated = changed("int64 amount = 2;", "repeated int64 amount = 2;")
    assert kinds(verdict(optional, repeated)) == {"FIELD_NUMERIC_LABEL_CHANGED"}
    # a proto3 field without a label has none to compare, as the reference reads it
    assert verdict(BASE, repeated).compatible
    strings = changed("string id = 1;", "repeated string id = 1;")
    assert verdict(changed("string id = 1;", "optional string id = 1;"), strings).compatible


def test_a_proto2_field_moved_into_a_oneof_has_no_label_to_compare():
    old = order("optional int64 a = 1;\n  optional int64 b = 2;", syntax="proto2")
    new = order("optional int64 b = 2;\n  oneof pick {\n    int64 a = 1;\n  }", syntax="proto2")
    assert verdict(old, new).compatible
    assert verdict(new, old).compatible


def test_oneof_changes_follow_the_reference():
    old = order("string a = 1;\n  string b = 2;\n  oneof pick {\n    string c = 3;\n  }")
    # one field moved into a new oneof: compatible
    one = order(
        "string b = 2;\n  oneof pick {\n    string c = 3;\n  }\n"
        "  oneof single {\n    string a = 1;\n  }"
    )
    assert verdict(old, one).compatible
    # two fields moved into one oneof: the data may set both, which a oneof cannot hold
    two = order(
        "oneof pick {\n    string c = 3;\n  }\n"
        "  oneof both {\n    string a = 1;\n    string b = 2;\n  }"
    )
    assert kinds(verdict(old, two)) == {"MULTIPLE_FIELDS_MOVED_TO_ONEOF"}
    # a field moved into the oneof that was there
    existing = order("string b = 2;\n  oneof pick {\n    string c = 3;\n    string a = 1;\n  }")
    assert kinds(verdict(old, existing)) == {"FIELD_MOVED_TO_EXISTING_ONEOF"}
    # a field added to a oneof is compatible, one removed from it is not
    added = order(
        "string a = 1;\n  string b = 2;\n  oneof pick {\n    string c = 3;\n    string d = 4;\n  }"
    )
    assert verdict(old, added).compatible
    assert kinds(verdict(added, old)) == {"ONEOF_FIELD_REMOVED"}


def test_a_message_field_s_type_is_compared_by_name_and_by_its_fields():
    old = order("Line line = 1;\n  message Line {\n    int64 sku = 1;\n  }")
    renamed_type = order("Item line = 1;\n  message Item {\n    int64 sku = 1;\n  }")
    assert "FIELD_NAMED_TYPE_CHANGED" in kinds(verdict(old, renamed_type))
    # the same type with an incompatible field inside: reported inside and on the field
    inner = order("Line line = 1;\n  message Line {\n    string sku = 1;\n  }")
    assert kinds(verdict(old, inner)) == {"FIELD_SCALAR_KIND_CHANGED", "FIELD_NAMED_TYPE_CHANGED"}


def test_a_recursive_message_is_compared_once():
    old = order("Order parent = 1;\n  string id = 2;")
    new = order("Order parent = 1;\n  string id = 2;\n  string note = 3;")
    assert verdict(old, new).compatible


def test_required_fields_bind_both_ways():
    old = order("required int32 a = 1;", syntax="proto2")
    new = order("required int32 a = 1;\n  required int32 b = 2;", syntax="proto2")
    assert kinds(verdict(old, new)) == {"REQUIRED_FIELD_ADDED"}
    assert kinds(verdict(new, old)) == {"REQUIRED_FIELD_REMOVED"}


def test_a_new_message_is_backward_compatible_and_not_forward():
    # the reference judges a message gone from the other side as removed, either way
    new = BASE + "\nmessage Refund {\n  string id = 1;\n}\n"
    assert verdict(BASE, new, "BACKWARD").compatible
    assert kinds(verdict(BASE, new, "FORWARD")) == {"MESSAGE_REMOVED"}
    assert not verdict(BASE, new, "FULL").compatible
    assert verdict(BASE, new, "NONE").compatible


def test_the_transitive_levels_compare_with_every_earlier_version():
    v1 = changed("int64 amount = 2;", "int64 amount = 2;\n  sint32 extra = 9;")
    v2 = BASE  # extra removed: compatible with v1
    v3 = changed("int64 amount = 2;", "int64 amount = 2;\n  string extra = 9;")  # reused
    parsed = formats.parse("PROTOBUF", v3).checked
    for mode, compatible in [
        ("BACKWARD", True),
        ("BACKWARD_TRANSITIVE", False),
        ("FORWARD", True),
        ("FORWARD_TRANSITIVE", False),
        ("FULL", True),
        ("FULL_TRANSITIVE", False),
        ("NONE", True),
    ]:
        result = formats.check("PROTOBUF", parsed, [v1, v2], mode=mode, policy="STRICT")
        assert result.compatible is compatible, mode


def test_a_verdict_lists_the_allowed_differences_apart_from_the_breaking_ones():
    new = changed("string id = 1;", "string ident = 1;\n  int32 added = 6;")
    result = verdict(BASE, new)
    assert result.compatible
    assert {d.kind for d in result.differences} == {"FIELD_NAME_CHANGED", "FIELD_ADDED"}
    assert result.breaking == ()
    assert all(d.path.startswith("#/Order/") for d in result.differences)
