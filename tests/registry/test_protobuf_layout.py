"""Protobuf text in the reference registry's layout where a file's text and its
descriptor part ways (issue 38): the file's own grouping of `reserved` and `extensions`
statements and order of options, a descriptor's layout, the normalized order of custom
options, `default` values, and custom options kept through a serialized descriptor.

Every expected text below is the reference's answer for these schemas of our own, read off
its code: ProtobufSchemaUtils.toString / toFormattedString (the canonical and normalized
text of a parsed file, which keeps wire's element lists in the file's order) and
ProtobufSchema.toProtoFile (how it reads a FileDescriptorProto)."""

import base64

import pytest

from apps.registry.formats import protobuf

STOCK = r"""syntax = "proto2";
package acme.stock;

option go_package = "acme/stock";
option (acme.meta.owner) = "stores";
option java_package = "com.acme.stock";

message Item {
  option (acme.meta.kind) = ENTITY;
  option deprecated = true;
  reserved 2, 4 to 6;
  reserved "sku_old", "price_old";
  reserved 9;
  required string sku = 1 [(acme.rules).len = 8, deprecated = true, (acme.rules).pattern = "[A-Z]+"];
  optional bytes tag = 3 [default = "\x01\"ok\"\n"];
  optional string note = 7 [default = "tab\there \"quoted\""];
  optional double cap = 8 [default = 1e10];
  optional float low = 10 [default = -inf];
  optional int32 count = 11 [default = 0x10];
  optional Unit unit = 12 [default = KG];
  extensions 100 to 199, 300;
  extensions 500 to max;
  oneof where { option (acme.meta.tag) = 1; string shelf = 20; string bin = 21; }
  enum Unit {
    option (acme.meta.kind) = UNIT;
    option allow_alias = true;
    reserved 5 to 6;
    reserved "G";
    KG = 0 [(acme.meta.label) = "kg", deprecated = true];
    KILO = 0;
    LB = 1;
  }
}

service Stock {
  option (acme.meta.owner) = "ops";
  option deprecated = true;
  rpc Watch (stream Item) returns (stream Item) { option (acme.meta.rate) = 5; option deprecated = true; }
}
"""

# The reference's toString of the parsed file: each `reserved` and `extensions` statement
# as the file grouped it, options (standard and custom) in the file's order, `default`
# after a field's other options; sections in its fixed order (reserved, options, fields,
# oneofs, extensions, nested types) whatever the file's order.
CANONICAL = r"""syntax = "proto2";
package acme.stock;

option go_package = "acme/stock";
option (acme.meta.owner) = "stores";
option java_package = "com.acme.stock";

message Item {
  reserved 2, 4 to 6;
  reserved "sku_old", "price_old";
  reserved 9;

  option (acme.meta.kind) = ENTITY;
  option deprecated = true;

  required string sku = 1 [
    (acme.rules).len = 8,
    deprecated = true,
    (acme.rules).pattern = "[A-Z]+"
  ];
  optional bytes tag = 3 [default = "\001\"ok\"\n"];
  optional string note = 7 [default = "tab\there \"quoted\""];
  optional double cap = 8 [default = 10000000000.0];
  optional float low = 10 [default = -inf];
  optional int32 count = 11 [default = 0x10];
  optional Unit unit = 12 [default = KG];

  oneof where {
    option (acme.meta.tag) = 1;

    string shelf = 20;
    string bin = 21;
  }

  extensions 100 to 199, 300;
  extensions 500 to max;

  enum Unit {
    reserved 5 to 6;
    reserved "G";
    option (acme.meta.kind) = UNIT;
    option allow_alias = true;
    KG = 0 [
      (acme.meta.label) = "kg",
      deprecated = true
    ];
    KILO = 0;
    LB = 1;
  }
}

service Stock {
  option (acme.meta.owner) = "ops";
  option deprecated = true;

  rpc Watch (stream Item) returns (stream Item) {
    option (acme.meta.rate) = 5;
    option deprecated = true;
  };
}
"""

# The reference's text of the same file sent as a FileDescriptorProto (toProtoFile): each
# reserved range, reserved name and extension range a statement of its own (ranges, then
# names), the standard options in its own order (java_package before go_package;
# deprecated, allow_alias, … first) and the custom ones after them, types named in full,
# no `syntax` for a proto2 descriptor (protoc leaves it out).
DESCRIPTOR = r"""package acme.stock;

option java_package = "com.acme.stock";
option go_package = "acme/stock";
option (acme.meta.owner) = "stores";

message Item {
  reserved 2;
  reserved 4 to 6;
  reserved 9;
  reserved "sku_old";
  reserved "price_old";

  option deprecated = true;
  option (acme.meta.kind) = ENTITY;

  required string sku = 1 [
    deprecated = true,
    (acme.rules).len = 8,
    (acme.rules).pattern = "[A-Z]+"
  ];
  optional bytes tag = 3 [default = "\001\"ok\"\n"];
  optional string note = 7 [default = "tab\there \"quoted\""];
  optional double cap = 8 [default = 10000000000];
  optional float low = 10 [default = -inf];
  optional int32 count = 11 [default = 16];
  optional .acme.stock.Item.Unit unit = 12 [default = KG];

  oneof where {
    option (acme.meta.tag) = 1;

    string shelf = 20;
    string bin = 21;
  }

  extensions 100 to 199;
  extensions 300;
  extensions 500 to max;

  enum Unit {
    reserved 5 to 6;
    reserved "G";
    option allow_alias = true;
    option (acme.meta.kind) = UNIT;
    KG = 0 [
      deprecated = true,
      (acme.meta.label) = "kg"
    ];
    KILO = 0;
    LB = 1;
  }
}

service Stock {
  option deprecated = true;
  option (acme.meta.owner) = "ops";

  rpc Watch (stream .acme.stock.Item) returns (stream .acme.stock.Item) {
    option deprecated = true;
    option (acme.meta.rate) = 5;
  };
}
"""


def test_the_text_keeps_the_files_reserved_grouping_and_option_order():
    schema = protobuf.parse_schema(STOCK)
    assert schema.canonical == CANONICAL
    # the answered text reads back as itself, and as the same schema
    again = protobuf.parse_schema(schema.canonical)
    assert again.canonical == CANONICAL
    assert again.fingerprint == schema.fingerprint


def test_a_descriptor_is_written_as_the_reference_writes_a_descriptor():
    sent = protobuf.parse_schema(protobuf.parse_schema(STOCK).serialized())
    assert sent.canonical == DESCRIPTOR
    # and it is the same schema as the text it came from
    assert sent.fingerprint == protobuf.parse_schema(STOCK).fingerprint


def test_the_normalized_text_does_not_depend_on_the_files_grouping_or_order():
    # normalize: each reserved value and extension range a statement of its own, sorted
    # (names last), options sorted by name whatever the file's order
    regrouped = STOCK.replace(
        'reserved 2, 4 to 6;\n  reserved "sku_old", "price_old";\n  reserved 9;',
        'reserved 9, 2;\n  reserved "price_old";\n  reserved 4 to 6;\n  reserved "sku_old";',
    ).replace(
        'option go_package = "acme/stock";\noption (acme.meta.owner) = "stores";\n',
        'option (acme.meta.owner) = "stores";\noption go_package = "acme/stock";\n',
    )
    assert regrouped != STOCK
    schema, other = protobuf.parse_schema(STOCK), protobuf.parse_schema(regrouped)
    assert other.canonical != schema.canonical  # each answered as its file says
    assert other.fingerprint == schema.fingerprint
    normalized = schema.normalized
    assert "  reserved 2;\n  reserved 4 to 6;\n  reserved 9;\n" in normalized
    assert '  reserved "price_old";\n  reserved "sku_old";\n' in normalized
    assert "  extensions 100 to 199;\n  extensions 300;\n  extensions 500 to max;\n" in normalized
    assert (
        'option (acme.meta.owner) = "stores";\n'
        'option go_package = "acme/stock";\n'
        'option java_package = "com.acme.stock";\n'
    ) in normalized


def test_normalized_custom_options_sort_by_their_extensions_name_alone():
    # the reference's OptionElement for `(a).z = 1` is named `a` (its sub-field is part of
    # the value), and normalize sorts options by that name with a stable sort: `(a).z`
    # and `(a).b` keep the file's order, before `(a.b)`
    text = (
        'syntax = "proto3";\nmessage M {\n'
        "  string s = 1 [(a.b) = 2, (a).z = 1, deprecated = true, (a).b = 3];\n}\n"
    )
    normalized = protobuf.parse_schema(text).normalized
    assert "  string s = 1 [\n    (a).z = 1,\n    (a).b = 3,\n    (a.b) = 2,\n" in normalized
    assert "    deprecated = true\n  ];\n" in normalized


def test_defaults_are_written_as_the_reference_writes_them():
    schema = protobuf.parse_schema(STOCK)
    # a string: its content quoted and escaped once (ProtobufSchemaUtils.escapeChars)
    assert 'optional string note = 7 [default = "tab\\there \\"quoted\\""];' in schema.canonical
    # an enum constant as is; a number as written, normalized through DecimalFormat
    # (0x10 is 16, 1e10 has no exponent), `inf` and `nan` as they are
    assert "optional Unit unit = 12 [default = KG];" in schema.canonical
    assert "optional int32 count = 11 [default = 0x10];" in schema.canonical
    assert "optional int32 count = 11 [default = 16];" in schema.normalized
    assert "optional double cap = 8 [default = 10000000000];" in schema.normalized
    assert "optional float low = 10 [default = -inf];" in schema.normalized
    # the value itself is the one protoc reads: the descriptor's default is the string's
    # content, and a bytes value's C-escaped bytes, as protoc keeps them
    fields = {f.name: f for f in schema._resolved.message_type[0].field}
    assert fields["note"].default_value == 'tab\there "quoted"'
    assert fields["tag"].default_value == '\\001\\"ok\\"\\n'


def test_custom_options_are_kept_through_a_serialized_descriptor():
    # Steward's format=serialized keeps custom options as options protoc has not
    # interpreted: a client registering that descriptor again (or another registry
    # reading it) keeps them, in the text too
    schema = protobuf.parse_schema(STOCK)
    sent = protobuf.parse_schema(schema.serialized())
    assert 'option (acme.meta.owner) = "stores";' in sent.canonical
    assert '    (acme.rules).pattern = "[A-Z]+"\n' in sent.canonical
    assert sent.serialized() == schema.serialized()


@pytest.mark.django_db(transaction=True)
def test_the_api_answers_the_files_layout_and_a_descriptor_registered_again_is_the_same(live):
    _, http = live
    body = {"schemaType": "PROTOBUF", "schema": STOCK}
    first = http.post("/subjects/stock-value/versions", json=body).json()["id"]
    assert http.get("/subjects/stock-value/versions/1").json()["schema"] == CANONICAL
    encoded = http.get(f"/schemas/ids/{first}", params={"format": "serialized"}).json()["schema"]
    assert base64.b64decode(encoded)  # the descriptor, options and all
    # the descriptor registered under another subject: the same schema, the same id,
    # answered there in the reference's layout of a descriptor
    again = http.post(
        "/subjects/stock-copy-value/versions", json={"schemaType": "PROTOBUF", "schema": encoded}
    ).json()["id"]
    assert again == first
    assert http.get("/subjects/stock-copy-value/versions/1").json()["schema"] == DESCRIPTOR
