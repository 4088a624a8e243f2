"""The Avro checker: every rule of docs/registry-avro.md, every mode, identity and refusals.

Each rule is tested both ways, compatible and not, on the verdict and on the kinds and
paths of the differences. No test touches the database.
"""

import json
import time

import fastavro
import pytest

from apps.registry.formats import avro
from apps.registry.formats.avro import (
    KINDS,
    MODES,
    AvroSchema,
    Difference,
    InvalidSchema,
    SchemaTooComplex,
    Verdict,
    can_read,
    canonical,
    check,
    fingerprint,
    normal_form,
    parse_schema,
    rabin_fingerprint,
)
from apps.registry.formats.json_schema import Difference as JsonDifference
from bench.registry import bench_check_ms

# CPU seconds, not wall time: other processes (and test workers) share the machine.
HANG_GUARD = 2.0  # the checker must answer long before this


def record(name, *fields, **attrs):
    return {"type": "record", "name": name, "fields": list(fields), **attrs}


def field(name, type_, **attrs):
    return {"name": name, "type": type_, **attrs}


def enum(name, *symbols, **attrs):
    return {"type": "enum", "name": name, "symbols": list(symbols), **attrs}


def fixed(name, size, **attrs):
    return {"type": "fixed", "name": name, "size": size, **attrs}


def found(differences):
    """(kind, path) of each difference, in order."""
    return [(d.kind, d.path) for d in differences]


def breaking(verdict):
    return [(d.kind, d.path) for d in verdict.breaking]


def one_field(type_, **attrs):
    return record("R", field("a", type_, **attrs))


# --------------------------------------------------------------------------- fields


def test_field_added_with_a_default_is_compatible_both_ways():
    old = record("R", field("a", "int"))
    new = record("R", field("a", "int"), field("b", "string", default="none"))
    assert can_read(new, old) == []
    assert can_read(old, new) == []  # the old reader skips the new field
    assert check(new, [old], mode="FULL").compatible


def test_a_null_default_is_a_default():
    old = record("R", field("a", "int"))
    new = record("R", field("a", "int"), field("b", ["null", "string"], default=None))
    assert can_read(new, old) == []


def test_field_added_without_a_default_breaks_backward_not_forward():
    old = record("R", field("a", "int"))
    new = record("R", field("a", "int"), field("b", "string"))
    differences = can_read(new, old)
    assert found(differences) == [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")]
    assert "'b'" in differences[0].message
    verdict = check(new, [old], mode="BACKWARD")
    assert not verdict.compatible
    assert breaking(verdict) == [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")]
    assert "new schema" in verdict.breaking[0].message
    assert check(new, [old], mode="FORWARD").compatible


def test_field_removed_is_backward_compatible_and_breaks_forward_without_a_default():
    old = record("R", field("a", "int"), field("b", "string"))
    new = record("R", field("a", "int"))
    assert check(new, [old], mode="BACKWARD").compatible  # the writer's extra field is skipped
    verdict = check(new, [old], mode="FORWARD")
    assert not verdict.compatible
    assert breaking(verdict) == [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")]
    assert "old schema" in verdict.breaking[0].message


def test_field_removed_that_had_a_default_is_fully_compatible():
    old = record("R", field("a", "int"), field("b", "string", default=""))
    new = record("R", field("a", "int"))
    assert check(new, [old], mode="FULL").compatible


def test_fields_match_by_name_not_position():
    old = record("R", field("a", "int"), field("b", "string"))
    new = record("R", field("b", "string"), field("a", "long"))
    assert check(new, [old], mode="BACKWARD").compatible
    assert found(can_read(old, new)) == [("TYPE_MISMATCH", "/fields/0/type")]


# --------------------------------------------------------------------------- promotions

PROMOTIONS = [
    ("int", "long"),
    ("int", "float"),
    ("int", "double"),
    ("long", "float"),
    ("long", "double"),
    ("float", "double"),
    ("string", "bytes"),
    ("bytes", "string"),
]


@pytest.mark.parametrize(("written", "read"), PROMOTIONS)
def test_promotion_reads_the_narrower_type(written, read):
    assert can_read(one_field(read), one_field(written)) == []
    assert check(one_field(read), [one_field(written)], mode="BACKWARD").compatible


@pytest.mark.parametrize(
    ("written", "read"),
    [(w, r) for r, w in PROMOTIONS if (w, r) not in PROMOTIONS],
)
def test_no_promotion_narrows(written, read):
    differences = can_read(one_field(read), one_field(written))
    assert found(differences) == [("TYPE_MISMATCH", "/fields/0/type")]
    assert f"writes {written}" in differences[0].message
    assert not check(one_field(read), [one_field(written)], mode="BACKWARD").compatible


@pytest.mark.parametrize(
    ("written", "read"),
    [
        ("int", "string"),
        ("boolean", "int"),
        ("null", "string"),
        ("string", "int"),
        ("double", "long"),
        ("float", "string"),
    ],
)
def test_other_primitive_changes_break(written, read):
    assert found(can_read(one_field(read), one_field(written))) == [
        ("TYPE_MISMATCH", "/fields/0/type")
    ]


def test_string_and_bytes_promote_both_ways():
    assert check(one_field("bytes"), [one_field("string")], mode="FULL").compatible


def test_a_type_mismatch_at_the_root_has_the_root_path():
    assert found(can_read('"int"', '"string"')) == [("TYPE_MISMATCH", "/")]
    assert found(can_read({"type": "array", "items": "int"}, {"type": "map", "values": "int"})) == [
        ("TYPE_MISMATCH", "/")
    ]


# --------------------------------------------------------------------------- enums


def test_enum_symbol_added_is_backward_compatible_and_breaks_forward():
    old = one_field(enum("Colour", "RED", "GREEN"))
    new = one_field(enum("Colour", "RED", "GREEN", "BLUE"))
    assert check(new, [old], mode="BACKWARD").compatible
    verdict = check(new, [old], mode="FORWARD")
    assert breaking(verdict) == [("MISSING_ENUM_SYMBOLS", "/fields/0/type/symbols")]
    assert "BLUE" in verdict.breaking[0].message


def test_enum_symbol_added_is_forward_compatible_when_the_old_enum_has_a_default():
    old = one_field(enum("Colour", "RED", "GREEN", "UNKNOWN", default="UNKNOWN"))
    new = one_field(enum("Colour", "RED", "GREEN", "UNKNOWN", "BLUE", default="UNKNOWN"))
    assert check(new, [old], mode="FULL").compatible


def test_enum_symbol_removed_breaks_backward_unless_the_new_enum_has_a_default():
    old = enum("Colour", "RED", "GREEN", "BLUE")
    new = enum("Colour", "RED", "GREEN")
    verdict = check(new, [old], mode="BACKWARD")
    assert breaking(verdict) == [("MISSING_ENUM_SYMBOLS", "/symbols")]
    assert "BLUE" in verdict.breaking[0].message
    assert check(new, [old], mode="FORWARD").compatible
    with_default = enum("Colour", "RED", "GREEN", default="RED")
    assert check(with_default, [old], mode="BACKWARD").compatible


def test_enum_default_of_the_writer_does_not_help_the_reader():
    old = enum("Colour", "RED", "GREEN", "BLUE", default="RED")
    new = enum("Colour", "RED", "GREEN")
    assert breaking(check(new, [old])) == [("MISSING_ENUM_SYMBOLS", "/symbols")]


# --------------------------------------------------------------------------- unions


def test_union_branch_added_is_backward_compatible_and_breaks_forward():
    old = one_field(["null", "string"])
    new = one_field(["null", "string", "long"])
    assert check(new, [old], mode="BACKWARD").compatible
    verdict = check(new, [old], mode="FORWARD")
    assert breaking(verdict) == [("MISSING_UNION_BRANCH", "/fields/0/type")]
    assert "long (branch 2)" in verdict.breaking[0].message


def test_union_branch_removed_breaks_backward():
    old = one_field(["null", "string", "boolean"])
    new = one_field(["null", "string"])
    verdict = check(new, [old], mode="BACKWARD")
    assert breaking(verdict) == [("MISSING_UNION_BRANCH", "/fields/0/type")]
    assert "boolean" in verdict.breaking[0].message
    assert check(new, [old], mode="FORWARD").compatible


def test_union_branches_reordered_are_compatible():
    assert check(
        one_field(["string", "null"]), [one_field(["null", "string"])], mode="FULL"
    ).compatible


def test_union_branch_may_be_read_by_promotion():
    assert can_read(one_field(["null", "long"]), one_field(["null", "int"])) == []
    assert found(can_read(one_field(["null", "int"]), one_field(["null", "long"]))) == [
        ("MISSING_UNION_BRANCH", "/fields/0/type")
    ]


def test_type_widened_into_a_union():
    old = one_field("string")
    new = one_field(["null", "string"])
    # a reader union reads a writer that is not a union with a matching branch
    assert check(new, [old], mode="BACKWARD").compatible
    # a reader that is not a union must read every branch of the writer's union
    verdict = check(new, [old], mode="FORWARD")
    assert breaking(verdict) == [("TYPE_MISMATCH", "/fields/0/type")]
    assert "null (branch 0)" in verdict.breaking[0].message


def test_reader_union_without_a_branch_for_the_writer_type():
    differences = can_read(one_field(["null", "string"]), one_field("int"))
    assert found(differences) == [("MISSING_UNION_BRANCH", "/fields/0/type")]
    assert "int" in differences[0].message


def test_writer_union_read_by_a_type_that_reads_every_branch():
    assert can_read(one_field("double"), one_field(["int", "long", "float"])) == []


def test_a_difference_inside_a_union_branch_points_into_that_branch():
    old = one_field(["null", record("Inner", field("x", "int"))])
    new = one_field(["null", record("Inner", field("x", "string"))])
    assert breaking(check(new, [old])) == [("TYPE_MISMATCH", "/fields/0/type/1/fields/0/type")]


def test_a_narrowed_writer_union_of_records():
    inner = record("Inner", field("x", "int"))
    old = one_field(inner)
    new = one_field(["null", record("Inner", field("x", "long"))])
    assert check(new, [old], mode="BACKWARD").compatible
    verdict = check(new, [old], mode="FORWARD")
    assert breaking(verdict) == [
        ("TYPE_MISMATCH", "/fields/0/type/fields/0/type"),
        ("TYPE_MISMATCH", "/fields/0/type"),
    ]


# --------------------------------------------------------------------------- names, aliases


def test_renamed_record_without_an_alias_breaks():
    old = record("Order", field("id", "long"))
    new = record("Purchase", field("id", "long"))
    verdict = check(new, [old])
    assert breaking(verdict) == [("NAME_MISMATCH", "/name")]
    assert "Order" in verdict.breaking[0].message


def test_renamed_record_with_an_alias_of_the_old_full_name_is_compatible():
    old = record("Order", field("id", "long"), namespace="shop")
    new = record("Purchase", field("id", "long"), namespace="shop", aliases=["shop.Order"])
    assert check(new, [old], mode="BACKWARD").compatible
    # an unqualified alias is in the record's namespace
    short = record("Purchase", field("id", "long"), namespace="shop", aliases=["Order"])
    assert check(short, [old], mode="BACKWARD").compatible
    # the writer's aliases do not count: the old reader does not know the new name
    assert breaking(check(new, [old], mode="FORWARD")) == [("NAME_MISMATCH", "/name")]


def test_an_alias_in_another_namespace_does_not_match():
    old = record("Order", field("id", "long"), namespace="shop")
    new = record("Purchase", field("id", "long"), namespace="shop", aliases=["billing.Order"])
    assert breaking(check(new, [old])) == [("NAME_MISMATCH", "/name")]


def test_a_namespace_change_alone_keeps_the_unqualified_name():
    old = record("Order", field("id", "long"), namespace="shop.v1")
    new = record("Order", field("id", "long"), namespace="shop.v2")
    assert check(new, [old], mode="FULL").compatible


def test_renamed_field_needs_an_alias_on_the_reader():
    old = record("R", field("zip", "string"))
    renamed = record("R", field("postcode", "string"))
    assert breaking(check(renamed, [old])) == [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0")]
    aliased = record("R", field("postcode", "string", aliases=["zip"]))
    assert check(aliased, [old], mode="BACKWARD").compatible
    # the old reader does not know the new name, and its field has no default
    assert breaking(check(aliased, [old], mode="FORWARD")) == [
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0")
    ]


def test_renamed_enum_and_fixed_with_aliases():
    old_enum = one_field(enum("Colour", "RED", namespace="paint"))
    new_enum = one_field(enum("Hue", "RED", namespace="paint", aliases=["Colour"]))
    assert check(new_enum, [old_enum]).compatible
    assert breaking(check(one_field(enum("Hue", "RED")), [old_enum])) == [
        ("NAME_MISMATCH", "/fields/0/type/name")
    ]
    old_fixed = one_field(fixed("Hash", 32))
    new_fixed = one_field(fixed("Digest", 32, aliases=["Hash"]))
    assert check(new_fixed, [old_fixed]).compatible
    assert breaking(check(one_field(fixed("Digest", 32)), [old_fixed])) == [
        ("NAME_MISMATCH", "/fields/0/type/name")
    ]


def test_renamed_type_inside_a_union_is_found_by_its_alias():
    old = one_field(["null", record("Address", field("street", "string"))])
    new = one_field(["null", record("Location", field("street", "string"), aliases=["Address"])])
    assert check(new, [old], mode="BACKWARD").compatible
    assert breaking(check(new, [old], mode="FORWARD")) == [
        ("MISSING_UNION_BRANCH", "/fields/0/type")
    ]


# --------------------------------------------------------------------------- nesting


def test_nested_records_are_resolved_field_by_field():
    def version(zip_type, extra=()):
        address = record("Address", field("street", "string"), field("zip", zip_type), *extra)
        return record("Customer", field("name", "string"), field("address", address))

    assert check(version("long"), [version("int")], mode="BACKWARD").compatible
    verdict = check(version("int"), [version("long")], mode="BACKWARD")
    assert breaking(verdict) == [("TYPE_MISMATCH", "/fields/1/type/fields/1/type")]
    new = version("int", [field("city", "string")])
    assert breaking(check(new, [version("int")])) == [
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1/type/fields/2")
    ]


def test_arrays_resolve_their_items():
    old = one_field({"type": "array", "items": "int"})
    assert check(one_field({"type": "array", "items": "long"}), [old]).compatible
    verdict = check(one_field({"type": "array", "items": "string"}), [old])
    assert breaking(verdict) == [("TYPE_MISMATCH", "/fields/0/type/items")]


def test_maps_resolve_their_values():
    old = one_field({"type": "map", "values": record("V", field("n", "int"))})
    new = one_field({"type": "map", "values": record("V", field("n", "int"), field("m", "int"))})
    assert breaking(check(new, [old])) == [
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0/type/values/fields/1")
    ]
    assert check(new, [old], mode="FORWARD").compatible


def test_array_and_map_do_not_resolve_to_each_other():
    old = one_field({"type": "array", "items": "string"})
    new = one_field({"type": "map", "values": "string"})
    assert breaking(check(new, [old])) == [("TYPE_MISMATCH", "/fields/0/type")]


def test_fixed_sizes_must_be_equal():
    old = one_field(fixed("Hash", 16))
    assert check(one_field(fixed("Hash", 16, doc="md5")), [old], mode="FULL").compatible
    verdict = check(one_field(fixed("Hash", 32)), [old])
    assert breaking(verdict) == [("FIXED_SIZE_MISMATCH", "/fields/0/type/size")]
    assert "32" in verdict.breaking[0].message and "16" in verdict.breaking[0].message


def test_a_named_type_used_twice_is_reported_at_each_use():
    address = record("Address", field("zip", "int"))
    old = record("Order", field("billing", address), field("shipping", "Address"))
    new_address = record("Address", field("zip", "string"))
    new = record("Order", field("billing", new_address), field("shipping", "Address"))
    assert breaking(check(new, [old])) == [
        ("TYPE_MISMATCH", "/fields/0/type/fields/0/type"),
        ("TYPE_MISMATCH", "/fields/1/type/fields/0/type"),
    ]


# --------------------------------------------------------------------------- recursion


def linked_list(value_type, *extra):
    return record("Node", field("value", value_type), field("next", ["null", "Node"]), *extra)


def test_recursive_types_terminate_when_compatible():
    old = linked_list("int")
    new = linked_list("long", field("label", "string", default=""))
    started = time.process_time()
    assert check(new, [old], mode="BACKWARD").compatible
    assert time.process_time() - started < HANG_GUARD


def test_recursive_types_report_a_difference_once():
    verdict = check(linked_list("int"), [linked_list("long")])
    assert breaking(verdict) == [("TYPE_MISMATCH", "/fields/0/type")]


def test_mutually_recursive_types():
    def tree(leaf):
        return record(
            "Tree",
            field("label", leaf),
            field(
                "children",
                {
                    "type": "array",
                    "items": record("Child", field("tree", "Tree"), field("weight", "float")),
                },
            ),
        )

    assert check(tree("string"), [tree("bytes")], mode="FULL").compatible
    assert breaking(check(tree("int"), [tree("long")])) == [("TYPE_MISMATCH", "/fields/0/type")]


# --------------------------------------------------------------------------- logical types


def test_logical_types_resolve_as_their_underlying_type():
    millis = {"type": "long", "logicalType": "timestamp-millis"}
    assert check(one_field(millis), [one_field("long")], mode="FULL").compatible
    date = {"type": "int", "logicalType": "date"}
    assert check(one_field(millis), [one_field(date)], mode="BACKWARD").compatible
    decimal_bytes = {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}
    decimal_fixed = fixed("Money", 8, logicalType="decimal", precision=9, scale=2)
    verdict = check(one_field(decimal_fixed), [one_field(decimal_bytes)])
    assert breaking(verdict) == [("TYPE_MISMATCH", "/fields/0/type")]
    assert "bytes (decimal)" in verdict.breaking[0].message


def test_a_malformed_decimal_is_read_as_its_underlying_type():
    # the reference ignores a logical type it finds invalid; fastavro alone would refuse it
    malformed = [
        {"type": "bytes", "logicalType": "decimal", "precision": 2, "scale": 5},
        {"type": "bytes", "logicalType": "decimal", "precision": "9"},
        fixed("Small", 1, logicalType="decimal", precision=5),
    ]
    for decimal in malformed:
        document = one_field(decimal)
        before = json.dumps(document)
        schema = parse_schema(document)
        assert "logicalType" not in json.dumps(schema.parsed)
        assert json.dumps(document) == before  # the caller's document is left as it was
    good = {"type": "bytes", "logicalType": "decimal", "precision": 9, "scale": 2}
    assert parse_schema(one_field(good)).parsed["fields"][0]["type"]["logicalType"] == "decimal"
    unknown = {"type": "long", "logicalType": "epoch-fortnights"}
    assert check(one_field(unknown), [one_field("int")]).compatible


def test_a_changed_logical_type_alone_is_not_a_resolution_difference():
    millis = {"type": "long", "logicalType": "timestamp-millis"}
    micros = {"type": "long", "logicalType": "timestamp-micros"}
    assert check(one_field(micros), [one_field(millis)], mode="FULL").compatible
    assert normal_form(one_field(micros)) != normal_form(one_field(millis))


# --------------------------------------------------------------------------- modes


def versions(*field_lists):
    return [record("R", *fields) for fields in field_lists]


def test_modes_are_the_seven_of_the_reference():
    assert set(MODES) == {
        "BACKWARD",
        "BACKWARD_TRANSITIVE",
        "FORWARD",
        "FORWARD_TRANSITIVE",
        "FULL",
        "FULL_TRANSITIVE",
        "NONE",
    }


def test_backward_transitive_checks_every_earlier_version():
    v1, v2, v3 = versions(
        [field("a", "int")],
        [field("a", "int"), field("b", "string", default="")],
        [field("a", "int"), field("b", "string")],
    )
    assert check(v3, [v1, v2], mode="BACKWARD").compatible  # v2 always has b
    verdict = check(v3, [v1, v2], mode="BACKWARD_TRANSITIVE")
    assert breaking(verdict) == [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")]


def test_forward_transitive_checks_every_earlier_version():
    v1, v2, v3 = versions(
        [field("a", "int"), field("c", "string")],
        [field("a", "int"), field("c", "string", default="")],
        [field("a", "int")],
    )
    assert check(v3, [v1, v2], mode="FORWARD").compatible  # v2 reads c from its default
    verdict = check(v3, [v1, v2], mode="FORWARD_TRANSITIVE")
    assert breaking(verdict) == [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1")]
    assert "old schema" in verdict.breaking[0].message


def test_full_checks_both_directions_and_names_each_side():
    old = record("R", field("a", "int"), field("b", "string"))
    new = record("R", field("a", "int"), field("c", "string"))
    verdict = check(new, [old], mode="FULL")
    assert not verdict.compatible
    assert breaking(verdict) == [
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1"),  # the new schema's c
        ("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/1"),  # the old schema's b
    ]
    messages = [d.message for d in verdict.breaking]
    assert "'c'" in messages[0] and "new schema" in messages[0]
    assert "'b'" in messages[1] and "old schema" in messages[1]


def test_full_transitive_against_every_version_in_both_directions():
    v1, v2, v3 = versions(
        [field("a", "int")],
        [field("a", "int"), field("b", "long", default=0)],
        [field("a", "int"), field("b", "long", default=0), field("c", "int", default=0)],
    )
    assert check(v3, [v1, v2], mode="FULL_TRANSITIVE").compatible
    v4 = record("R", field("a", "long"), field("b", "long", default=0))
    assert check(v4, [v2, v3], mode="BACKWARD_TRANSITIVE").compatible
    verdict = check(v4, [v1, v2, v3], mode="FULL_TRANSITIVE")
    assert breaking(verdict) == [("TYPE_MISMATCH", "/fields/0/type")]  # once for 3 versions


def test_none_and_an_empty_history_are_always_compatible():
    old = one_field("int")
    new = one_field("string")
    assert check(new, [old], mode="NONE") == Verdict(True, "NONE", "STRICT")
    assert check(new, [], mode="FULL_TRANSITIVE").compatible


def test_plain_modes_compare_with_the_latest_version_only():
    v1 = one_field("string")
    v2 = one_field("int")
    v3 = one_field("long")
    assert check(v3, [v1, v2], mode="BACKWARD").compatible
    assert not check(v3, [v1, v2], mode="BACKWARD_TRANSITIVE").compatible


def test_mode_and_policy_names():
    old, new = one_field("int"), one_field("long")
    verdict = check(new, [old], mode="backward", policy="lenient")
    assert (verdict.mode, verdict.policy, verdict.compatible) == ("BACKWARD", "LENIENT", True)
    with pytest.raises(ValueError, match="mode"):
        check(new, [old], mode="SIDEWAYS")
    with pytest.raises(ValueError, match="policy"):
        check(new, [old], policy="LAX")
    with pytest.raises(TypeError):
        check(new, json.dumps(old))


def test_the_verdict_and_differences_are_the_json_checker_s():
    verdict = check(one_field("int"), [one_field("string")])
    assert isinstance(verdict.breaking[0], JsonDifference)
    assert verdict.differences == verdict.breaking
    assert verdict.as_dict()["breaking"][0]["kind"] == "TYPE_MISMATCH"
    assert all(d.kind in KINDS for d in verdict.breaking)
    assert Difference is JsonDifference


def test_inputs_may_be_text_json_or_parsed():
    old = one_field("int")
    new = one_field("long")
    for reader in (new, json.dumps(new), json.dumps(new).encode(), parse_schema(new)):
        assert can_read(reader, json.dumps(old)) == []


# --------------------------------------------------------------------------- identity

ORDER = record(
    "Order",
    field("id", "long"),
    field("lines", {"type": "array", "items": record("Line", field("sku", "string"))}),
    field("status", enum("Status", "NEW", "PAID")),
    field("more", ["null", "Line"], default=None),
    namespace="shop",
)


def test_canonical_form_is_fastavro_s_parsing_canonical_form():
    expected = fastavro.schema.to_parsing_canonical_form(fastavro.schema.parse_schema(ORDER))
    assert canonical(ORDER) == expected
    assert canonical(json.dumps(ORDER)).startswith('{"name":"shop.Order","type":"record"')
    assert canonical('"int"') == canonical('{"type": "int"}') == '"int"'


def test_reformatted_schema_has_the_same_canonical_form_and_fingerprints():
    reformatted = {
        "doc": "orders, as the shop writes them",
        "fields": [
            {"type": "long", "name": "id", "doc": "the order number"},
            {
                "name": "lines",
                "type": {
                    "items": {
                        "name": "shop.Line",
                        "type": "record",
                        "fields": [{"name": "sku", "type": "string"}],
                    },
                    "type": "array",
                },
            },
            {
                "name": "status",
                "type": {"symbols": ["NEW", "PAID"], "name": "Status", "type": "enum"},
                "aliases": ["state"],
            },
            {"name": "more", "type": ["null", "shop.Line"], "default": None},
        ],
        "name": "shop.Order",
        "type": "record",
        "aliases": ["Purchase"],
    }
    text = json.dumps(reformatted, indent=4)
    assert canonical(text) == canonical(ORDER)
    assert fingerprint(text) == fingerprint(ORDER)
    assert rabin_fingerprint(text) == rabin_fingerprint(ORDER)
    assert len(fingerprint(ORDER)) == 64 and len(rabin_fingerprint(ORDER)) == 16
    assert rabin_fingerprint(ORDER) == fastavro.schema.fingerprint(canonical(ORDER), "CRC-64-AVRO")


def test_a_different_schema_has_a_different_fingerprint():
    reordered = dict(ORDER, fields=list(reversed(ORDER["fields"][:3])) + ORDER["fields"][3:])
    assert fingerprint(reordered) != fingerprint(ORDER)
    assert fingerprint(dict(ORDER, name="Sale")) != fingerprint(ORDER)
    assert rabin_fingerprint('"int"') != rabin_fingerprint('"long"')
    assert rabin_fingerprint('{"type": "int"}') == "8f5c393f1ad57572"  # Avro's own value


def test_normal_form_keeps_what_the_canonical_form_drops():
    with_default = record("R", field("a", "int", default=0))
    without = record("R", field("a", "int"))
    assert canonical(with_default) == canonical(without)
    assert normal_form(with_default) != normal_form(without)
    # but formatting, attribute order and the spelling of names do not count
    spelled = {
        "fields": [{"default": 0, "type": "int", "name": "a"}],
        "name": "R",
        "type": "record",
    }
    assert normal_form(json.dumps(spelled, indent=2)) == normal_form(with_default)
    ns = record("R", field("a", "int"), namespace="x", aliases=["Old"])
    full = record("x.R", field("a", "int"), aliases=["x.Old"])
    assert normal_form(ns) == normal_form(full)
    assert parse_schema(ns) == parse_schema(full)


def test_parsed_schema_describes_itself():
    schema = parse_schema(ORDER)
    assert isinstance(schema, AvroSchema)
    assert schema.name == "shop.Order"
    assert set(schema.names) == {"shop.Order", "shop.Line", "shop.Status"}
    assert schema.external == ()
    assert parse_schema('["null", "int"]').name is None
    assert parse_schema(schema) is schema


def test_parsing_is_cached_by_text():
    text = json.dumps(ORDER)
    assert parse_schema(text) is parse_schema(text)
    assert parse_schema(text.encode()) is parse_schema(text.encode())


def test_the_parsed_form_serialises_with_fastavro():
    import io

    schema = parse_schema(ORDER)
    buffer = io.BytesIO()
    value = {"id": 1, "lines": [{"sku": "a"}], "status": "PAID", "more": None}
    fastavro.schemaless_writer(buffer, schema.parsed, value)
    buffer.seek(0)
    assert fastavro.schemaless_reader(buffer, schema.parsed) == value


# --------------------------------------------------------------------------- references

ADDRESS = record("Address", field("street", "string"), namespace="common")


def test_named_types_may_come_from_references():
    customer = record("Customer", field("home", "common.Address"), namespace="shop")
    with pytest.raises(InvalidSchema, match="unknown type 'common.Address'"):
        parse_schema(customer)
    schema = parse_schema(json.dumps(customer), {"common.Address": json.dumps(ADDRESS)})
    assert schema.external == ("common.Address",)
    assert schema.names == ("shop.Customer",)
    assert canonical(schema) == (
        '{"name":"shop.Customer","type":"record","fields":[{"name":"home","type":"common.Address"}]}'
    )
    listed = parse_schema(customer, [ADDRESS])
    assert listed.canonical == schema.canonical
    streamed = parse_schema(json.dumps(customer), (ref for ref in [json.dumps(ADDRESS)]))
    assert streamed.external == ("common.Address",)
    with pytest.raises(InvalidSchema, match="references are a mapping"):
        parse_schema(customer, json.dumps(ADDRESS))


def test_a_later_reference_may_use_an_earlier_one():
    office = record("Office", field("address", "common.Address"), namespace="common")
    company = record("Company", field("hq", "common.Office"), namespace="shop")
    schema = parse_schema(company, {"address": ADDRESS, "office": office})
    assert schema.external == ("common.Address", "common.Office")  # reached through Office
    with pytest.raises(InvalidSchema, match="unknown type 'common.Address'"):
        parse_schema(company, {"office": office, "address": ADDRESS})  # in order of use


def test_references_may_not_redefine_a_name():
    again = record("Customer", field("home", ADDRESS), namespace="shop")
    with pytest.raises(InvalidSchema, match="redefines the named type common.Address"):
        parse_schema(again, {"address": ADDRESS})
    other = record("Address", field("street", "string"), field("zip", "string"), namespace="common")
    with pytest.raises(InvalidSchema, match="redefines"):
        parse_schema('"string"', {"a": ADDRESS, "b": other})
    # two references that each carry the same type (stored versions are bundled) agree
    parse_schema('"string"', {"a": ADDRESS, "b": ADDRESS})


def test_compatibility_across_referenced_types():
    customer = record("Customer", field("home", "common.Address"), namespace="shop")
    old = parse_schema(customer, {"address": ADDRESS})
    wider = record("Address", field("street", "string"), field("zip", "string"), namespace="common")
    new = parse_schema(customer, {"address": wider})
    assert old.canonical == new.canonical  # same text, different referenced versions
    verdict = check(new, [old])
    assert breaking(verdict) == [("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/0/type/fields/1")]


# --------------------------------------------------------------------------- refusals

INVALID = [
    ("{not json", "not JSON"),
    ("3", "not a number"),
    ('"decimal"', "unknown type 'decimal'"),
    (record("R", field("a", "Missing")), "unknown type 'Missing'"),
    (record("R", field("a", "int"), field("a", "long")), "field 'a' appears twice"),
    (enum("E", "A", "B", "A"), "enum symbol 'A' appears twice"),
    (enum("E", "A", "1B"), "not a valid name"),
    (record("9R"), "needs a 'name'"),
    (record("R", field("a-b", "int")), "needs a 'name'"),
    ({"type": "record", "fields": []}, "needs a 'name'"),
    (record("R", namespace="a..b"), "invalid namespace"),
    (record("int"), "named after a primitive"),
    ({"type": "record", "name": "R"}, "needs a 'fields' array"),
    (["null", ["int", "string"]], "union directly inside a union"),
    (["string", "null", "string"], "two string branches"),
    (["null", {"type": "long", "logicalType": "timestamp-millis"}, "long"], "two long branches"),
    (["null", record("R"), record("R2"), "R"], "has the type R twice"),
    (fixed("F", -1), "non-negative integer"),
    ({"type": "fixed", "name": "F"}, "needs a 'size'"),
    ({"type": "array"}, "array without 'items'"),
    ({"type": "map"}, "map without 'values'"),
    ({"name": "x"}, "without 'type'"),
    ({"type": {"type": "int"}}, "must be a type name"),
    (record("R", {"name": "a"}), "has no 'type'"),
    (record("R", field("a", "int", order="sideways")), "choose ascending"),
    (enum("E", "A", default="B"), "not one of its symbols"),
    (record("R", field("a", "int", default="1")), "not a valid int value"),
    (record("R", field("a", "int", default=True)), "not a valid int value"),
    (record("R", field("a", "int", default=2**31)), "not a valid int value"),
    (record("R", field("a", "string", default=None)), "not a valid string value"),
    (record("R", field("a", enum("E", "X"), default="Y")), "not a valid enum E value"),
    (
        record("R", field("p", record("P", field("x", "int")), default={"y": 1})),
        "not a valid record P value",
    ),
    (record("R", field("a", record("R2"), aliases="b")), "aliases of field 'a'"),
    (record("R", record("Nested")), "unknown type 'record'"),
    (record("R", field("a", record("R"))), "redefined named type"),
    (12, "not int"),
]


@pytest.mark.parametrize(("schema", "reason"), INVALID, ids=[r for _, r in INVALID])
def test_invalid_schemas_are_refused_with_a_reason(schema, reason):
    with pytest.raises(InvalidSchema) as caught:
        parse_schema(schema if isinstance(schema, str | int) else json.dumps(schema))
    assert reason in str(caught.value)
    assert caught.value.reason == str(caught.value)


def test_valid_defaults_are_accepted():
    parse_schema(
        record(
            "R",
            field("n", "null", default=None),
            field("b", "boolean", default=False),
            field("l", "long", default=-(2**63)),
            field("f", "float", default="NaN"),
            field("d", "double", default=1),
            field("s", "bytes", default="\u00ff"),
            field("u", ["null", "string"], default="second branch, as the reference allows"),
            field("a", {"type": "array", "items": "int"}, default=[1, 2]),
            field("m", {"type": "map", "values": "int"}, default={"x": 1}),
            field(
                "r",
                record("P", field("x", "int"), field("y", "int", default=0)),
                default={"x": 1},
            ),
        )
    )


def test_defaults_may_go_unchecked_for_stored_versions():
    bad = record("R", field("a", "int", default="one"))
    with pytest.raises(InvalidSchema):
        parse_schema(bad)
    assert parse_schema(json.dumps(bad), validate_defaults=False).name == "R"


def test_too_deep_a_schema_is_too_complex():
    schema = "int"
    for n in range(avro.MAX_DEPTH + 5):
        schema = {"type": "array", "items": schema}
    with pytest.raises(SchemaTooComplex):
        parse_schema(json.dumps(schema))
    text = "[" * 5000 + "]" * 5000
    with pytest.raises(SchemaTooComplex):
        parse_schema(text)


def test_too_large_a_schema_is_too_complex():
    symbols = [f"S{n}" for n in range(avro.MAX_JSON_NODES + 1)]
    with pytest.raises(SchemaTooComplex, match="JSON values"):
        parse_schema(json.dumps(enum("E", *symbols)))


def chain(count, leaf, holder):
    """A record whose field `last` is T<count-1>, each T<n> holding a T<n-1>: the types
    are defined side by side in the union of field `holder`, so the schema is shallow to
    write, and deep to walk from `last`."""
    types = [record("T0", field("v", leaf))]
    types += [record(f"T{n}", field("prev", f"T{n - 1}")) for n in range(1, count)]
    return record(
        "Root",
        field(holder, ["null", *types], default=None),
        field("last", f"T{count - 1}"),
    )


def test_a_deep_walk_through_named_types():
    # the reader's holder has a default and the writer's is skipped: only `last` is walked
    count = avro.MAX_WALK_DEPTH // 2
    verdict = check(chain(count, "string", "mine"), [chain(count, "int", "theirs")])
    path = "/fields/1/type" + "/fields/0/type" * count
    assert breaking(verdict) == [("TYPE_MISMATCH", path)]


def test_too_deep_a_walk_through_named_types_is_too_complex():
    count = avro.MAX_WALK_DEPTH + 10
    reader = parse_schema(chain(count, "string", "mine"))
    writer = parse_schema(chain(count, "int", "theirs"))
    started = time.process_time()
    with pytest.raises(SchemaTooComplex, match="deep"):
        can_read(reader, writer)
    assert time.process_time() - started < HANG_GUARD


def test_shared_types_do_not_multiply_the_work_or_the_report():
    # T(n) has two fields of type T(n-1): 2**30 paths to the innermost type
    inner = record("T0", field("v", "int"))
    schema = inner
    for n in range(1, 31):
        schema = record(f"T{n}", field("a", schema), field("b", f"T{n - 1}"))
    old = parse_schema(schema)
    new = parse_schema(json.dumps(schema).replace('"v", "type": "int"', '"v", "type": "string"'))
    started = time.process_time()
    verdict = check(new, [old])
    assert time.process_time() - started < HANG_GUARD
    assert not verdict.compatible
    assert 0 < len(verdict.breaking) <= avro.MAX_REPORTED
    assert {d.kind for d in verdict.breaking} == {"TYPE_MISMATCH"}


# --------------------------------------------------------------------------- performance


def test_a_check_of_a_50_field_record_takes_well_under_a_millisecond():
    assert bench_check_ms(pairs=100) < 1.0


def test_an_invalid_reference_is_named():
    with pytest.raises(InvalidSchema, match="reference 'address': unknown type 'Nope'"):
        parse_schema('"string"', {"address": record("A", field("x", "Nope"))})


def test_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(avro, "CACHE_SIZE", 3)
    monkeypatch.setattr(avro, "_CACHE", {})
    texts = [json.dumps(one_field("int")) + " " * n for n in range(10)]
    for text in texts:
        parse_schema(text)
    assert len(avro._CACHE) == 3
    assert parse_schema(texts[-1]) is parse_schema(texts[-1])


def test_parsing_the_new_version_too_stays_within_a_couple_of_milliseconds():
    # about 0.4 ms where the check alone takes 0.07 ms; the bound leaves room for a busy host
    assert bench_check_ms(pairs=100, parse_new=True) < 2.0
