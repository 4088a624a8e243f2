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
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf.message_factory import GetMessageClass

from apps.registry.formats import protobuf
from tests.registry.test_protobuf_confluent import compiled

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
  required string sku = 1 [
    (acme.rules).len = 8, deprecated = true, (acme.rules).pattern = "[A-Z]+"
  ];
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
    option (acme.meta.kind) = UNIT; option allow_alias = true; reserved 5 to 6; reserved "G";
    KG = 0 [(acme.meta.label) = "kg", deprecated = true]; KILO = 0; LB = 1;
  }
}

service Stock {
  option (acme.meta.owner) = "ops"; option deprecated = true;
  rpc Watch (stream Item) returns (stream Item) {
    option (acme.meta.rate) = 5; option deprecated = true; }
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
  optional double cap = 8 [default = 1e10];
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


# --------------------------------------------------------------------------- known extensions

RULES = """syntax = "proto3";
package acme;

import "google/protobuf/descriptor.proto";

message Rules {
  int32 len = 1;
  string pattern = 2;
  repeated string tags = 3;
}

extend google.protobuf.FieldOptions {
  Rules rules = 50001;
}
extend google.protobuf.FileOptions {
  string owner = 50002;
}
extend google.protobuf.FieldOptions {
  repeated string labels = 50003;
}
"""
ITEM = """syntax = "proto3";
package acme.stock;

import "rules.proto";

option (acme.owner) = "stores";

message Item {
  string sku = 1 [
    (rules).pattern = "[A-Z]+", (acme.rules).tags = "x", (acme.labels) = "b",
    (.acme.rules) = { len: 8 tags: "y" }, (acme.labels) = "a"
  ];
  string note = 2 [(acme.unknown).max = 3];
}
"""
# ProtobufSchemaUtils.FormatContext.filterOptions: a custom option whose extension the
# file can see is named in full, `(ext).a = v` becomes `(ext) = { a: v }`, and the options
# of one extension that is not repeated are merged (ProtobufSchema.merge: a field both set
# becomes the list of their values); a repeated extension's options stay one each; an
# option whose definition is unknown is written as sent. Sorted by name, stably.
ITEM_NORMALIZED = """syntax = "proto3";
package acme.stock;

import "rules.proto";

option (acme.owner) = "stores";

message Item {
  string sku = 1 [
    (acme.labels) = "b",
    (acme.labels) = "a",
    (acme.rules) = {
      len: 8,
      pattern: "[A-Z]+",
      tags: [
        "x",
        "y"
      ]
    }
  ];
  string note = 2 [(acme.unknown).max = 3];
}
"""

# ITEM as protoc takes it: every option's definition known, and an extension set by its
# sub-fields only (protoc refuses one set both by sub-field and whole)
ITEM_COMPILED = ITEM.replace("  string note = 2 [(acme.unknown).max = 3];\n", "").replace(
    '(.acme.rules) = { len: 8 tags: "y" }', '(acme.rules).len = 8, (acme.rules).tags = "y"'
)


def test_extend_blocks_are_kept_and_normalized_as_the_reference_does():
    schema = protobuf.parse_schema(RULES)
    # the text: the file's blocks as written, after the types
    assert schema.canonical == RULES
    # normalized: one block per extended type, named in full, its fields by number
    assert schema.normalized.endswith(
        "extend .google.protobuf.FieldOptions {\n"
        "  .acme.Rules rules = 50001;\n"
        "  repeated string labels = 50003;\n"
        "}\n"
        "extend .google.protobuf.FileOptions {\n"
        "  string owner = 50002;\n"
        "}\n"
    )


def test_normalize_names_and_merges_the_options_of_an_extension_a_reference_defines():
    schema = protobuf.parse_schema(ITEM, {"rules.proto": RULES})
    assert schema.normalized == ITEM_NORMALIZED
    # the text answered keeps the options as the file wrote them
    assert '(rules).pattern = "[A-Z]+",' in schema.canonical
    # written either way, the same schema
    merged = ITEM.replace(
        '(rules).pattern = "[A-Z]+", (acme.rules).tags = "x", (acme.labels) = "b",\n'
        '    (.acme.rules) = { len: 8 tags: "y" }, (acme.labels) = "a"',
        '(acme.labels) = "b",\n'
        '    (acme.rules) = { pattern: "[A-Z]+" len: 8 tags: ["x", "y"] }, (acme.labels) = "a"',
    )
    assert merged != ITEM
    assert protobuf.parse_schema(merged, {"rules.proto": RULES}).fingerprint == schema.fingerprint


def test_a_descriptor_protoc_compiled_keeps_its_custom_options(tmp_path):
    # given: the files compiled by protoc, whose options are extension fields of the
    # descriptor's *Options (what confluent-kafka's serializer registers, base64)
    pool = compiled(tmp_path, {"rules.proto": RULES, "item.proto": ITEM_COMPILED})
    sent = {
        name: base64.b64encode(pool.FindFileByName(name).serialized_pb).decode()
        for name in ("rules.proto", "item.proto")
    }
    # when: each is read as the registry reads a serialized descriptor
    rules = protobuf.parse_schema(sent["rules.proto"])
    item = protobuf.parse_schema(sent["item.proto"], {"rules.proto": rules.canonical})
    # then: the options are named by the extensions the reference defines, as the
    # reference's toCustomOptions writes them (a message value as its fields, a repeated
    # extension one option per value) ...
    assert 'option (acme.owner) = "stores";' in item.canonical
    assert (
        "    (acme.rules) = {\n"
        "      len: 8,\n"
        '      pattern: "[A-Z]+",\n'
        "      tags: [\n"
        '        "x",\n'
        '        "y"\n'
        "      ]\n"
        "    },\n"
        '    (acme.labels) = "b",\n'
        '    (acme.labels) = "a",\n'
        '    json_name = "sku"\n'  # protoc's descriptor carries it: written, as the reference does
    ) in item.canonical
    # ... kept through the serialized form answered; and, as the reference's normalize
    # keeps the json_name protoc's descriptor carries, another schema than the text
    # (which sets none), the same once the text sets it too
    again = protobuf.parse_schema(item.serialized(), {"rules.proto": rules.canonical})
    assert again.normalized == item.normalized
    text = protobuf.parse_schema(ITEM_COMPILED, {"rules.proto": rules.canonical})
    assert item.normalized.replace(',\n    json_name = "sku"\n', "\n") == text.normalized
    assert item.fingerprint != text.fingerprint
    named = ITEM_COMPILED.replace('(acme.labels) = "a"', '(acme.labels) = "a", json_name = "sku"')
    named = protobuf.parse_schema(named, {"rules.proto": rules.canonical})
    assert named.normalized == item.normalized
    # an option whose definition Steward does not hold (here, the imported file as
    # registered without its `extend` blocks) cannot be named: it is dropped, as the
    # reference, which reads a descriptor knowing no extension, drops every one
    bare = RULES[: RULES.index("extend")]
    unnamed = protobuf.parse_schema(sent["item.proto"], {"rules.proto": bare})
    assert "(acme." not in unnamed.canonical
    assert '  string sku = 1 [json_name = "sku"];\n' in unnamed.canonical
    assert (
        "(acme." not in protobuf.parse_schema(unnamed.serialized(), {"rules.proto": bare}).canonical
    )


@pytest.mark.django_db(transaction=True)
def test_the_serializer_registers_a_file_with_custom_options_and_they_are_kept(live, tmp_path):
    # given: a producer's class protoc compiled from a file whose options an imported
    # file defines
    pool = compiled(tmp_path, {"rules.proto": RULES, "item.proto": ITEM_COMPILED})
    item = GetMessageClass(pool.FindMessageTypeByName("acme.stock.Item"))
    new_client, http = live
    context = SerializationContext("items", MessageField.VALUE)
    # when: the serializer registers both files as descriptors and writes a message
    data = ProtobufSerializer(item, new_client())(item(sku="AB"), context)
    # then: the subject's text names the options as the reference would, ...
    served = http.get("/subjects/items-value/versions/latest").json()
    assert 'option (acme.owner) = "stores";' in served["schema"]
    assert '    (acme.labels) = "b",\n    (acme.labels) = "a",\n' in served["schema"]
    assert "extend google.protobuf.FieldOptions {" not in served["schema"]
    rules = http.get("/subjects/rules.proto/versions/latest").json()["schema"]
    # (json_name: the serializer's descriptor carries every field's, and so does its text)
    extend = (
        'extend .google.protobuf.FieldOptions {\n  .acme.Rules rules = 50001 [json_name = "rules"];'
    )
    assert extend in rules
    # ... the deserializer reads the message back with the registry's descriptor, and the
    # serializer finds its schema again as the same version
    assert ProtobufDeserializer(item, {}, new_client())(data, context).sku == "AB"
    ProtobufSerializer(item, new_client())(item(sku="CD"), context)
    assert http.get("/subjects/items-value/versions").json() == [1]


def test_a_written_json_name_is_written_back_normalized_too():
    # the reference writes a field's json_name whenever the file (or descriptor) has one,
    # even the one protoc would derive, in its normalized text too
    # (ProtobufSchemaUtils.toFormattedString adds it to the field's options whatever
    # its value): a file that writes it is another schema than one that does not
    text = 'syntax = "proto3";\nmessage M {\n  string order_id = 1 [json_name = "orderId"];\n}\n'
    schema = protobuf.parse_schema(text)
    assert '  string order_id = 1 [json_name = "orderId"];\n' in schema.canonical
    assert '  string order_id = 1 [json_name = "orderId"];\n' in schema.normalized
    plain = protobuf.parse_schema('syntax = "proto3";\nmessage M {\n  string order_id = 1;\n}\n')
    assert "  string order_id = 1;\n" in plain.normalized
    assert plain.fingerprint != schema.fingerprint
    # Steward's serialized form carries only the json_names that were written
    again = protobuf.parse_schema(plain.serialized())
    assert "json_name" not in again.canonical


def test_a_descriptors_map_is_written_as_its_entry_message():
    # ProtobufSchema.toMessage reads a descriptor's map as protoc keeps it: a repeated
    # field of the nested entry message, which is written with `option map_entry = true;`
    # (and normalize writes `map<K, V>` again, without the entry)
    text = (
        'syntax = "proto3";\npackage p;\n\nmessage M {\n'
        "  map<string, Inner> things = 1 [deprecated = true];\n"
        "  message Inner { int32 a = 1; }\n}\n"
    )
    schema = protobuf.parse_schema(text)
    sent = protobuf.parse_schema(schema.serialized())
    assert sent.canonical == (
        'syntax = "proto3";\npackage p;\n\nmessage M {\n'
        "  repeated .p.M.ThingsEntry things = 1 [deprecated = true];\n\n"
        "  message ThingsEntry {\n"
        "    option map_entry = true;\n\n"
        "    string key = 1;\n"
        "    .p.M.Inner value = 2;\n"
        "  }\n"
        "  message Inner {\n    int32 a = 1;\n  }\n}\n"
    )
    assert "  map<string, .p.M.Inner> things = 1 [deprecated = true];\n" in sent.normalized
    # the text answered is the same schema when read again, as stored
    assert protobuf.parse_schema(sent.canonical).fingerprint == schema.fingerprint


@pytest.mark.django_db(transaction=True)
def test_a_serializers_descriptor_is_another_schema_than_a_text_without_its_json_names(
    live, tmp_path
):
    # given: a file registered as text, which sets no json_name
    new_client, http = live
    text = 'syntax = "proto3";\npackage acme;\n\nmessage Parcel {\n  string parcel_id = 1;\n}\n'
    body = {"schemaType": "PROTOBUF", "schema": text}
    first = http.post("/subjects/parcels-value/versions", json=body).json()["id"]
    pool = compiled(tmp_path, {"parcel.proto": text})
    parcel = GetMessageClass(pool.FindMessageTypeByName("acme.Parcel"))
    sent = base64.b64encode(pool.FindFileByName("parcel.proto").serialized_pb).decode()
    # when: the descriptor protoc compiled from it (every field's json_name set) is
    # looked up under the subject, then registered by the serializer
    lookup = http.post("/subjects/parcels-value", json={**body, "schema": sent})
    context = SerializationContext("parcels", MessageField.VALUE)
    data = ProtobufSerializer(parcel, new_client())(parcel(parcel_id="p-1"), context)
    # then: as the reference, whose normalized text keeps the json_name: not found, and a
    # new version with an id of its own (compatible: json_name changes no field)
    assert (lookup.status_code, lookup.json()["error_code"]) == (404, 40403)
    assert int.from_bytes(data[1:5], "big") != first
    assert http.get("/subjects/parcels-value/versions").json() == [1, 2]
    served = http.get("/subjects/parcels-value/versions/2").json()["schema"]
    assert '  string parcel_id = 1 [json_name = "parcelId"];\n' in served
    assert ProtobufDeserializer(parcel, {}, new_client())(data, context).parcel_id == "p-1"
