"""The JSON Schema compatibility checker: every rule of registry-compatibility.md, every mode.

Each rule is a row: the old and the new schema, the kinds diff(old, new) reports, and the
kinds that break a BACKWARD check under STRICT and under LENIENT.
"""

import copy
import json
import random
import time

import pytest
from jsonschema import Draft7Validator, Draft202012Validator
from jsonschema.exceptions import SchemaError

from apps.registry.formats import json_schema as compatibility
from apps.registry.formats.json_schema import (
    MODES,
    POLICIES,
    Difference,
    InvalidSchema,
    SchemaTooComplex,
    Verdict,
    canonical,
    check,
    diff,
    fingerprint,
    is_allowed,
    parse_schema,
    plainly_valid,
)

DRAFT7 = "http://json-schema.org/draft-07/schema#"
DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"
# CPU seconds, not wall time: other processes (and test workers) share the machine.
HANG_GUARD = 2.0  # the checker must answer long before this


def kinds(differences):
    return {d.kind for d in differences}


def obj(required=(), **properties):
    schema = {"type": "object", "properties": properties}
    if required:
        schema["required"] = list(required)
    return schema


def closed(required=(), **properties):
    return {**obj(required, **properties), "additionalProperties": False}


def partial(extra, required=(), **properties):
    return {**obj(required, **properties), "additionalProperties": extra}


def patterned(required=(), **properties):
    return {
        **obj(required, **properties),
        "patternProperties": {"^x_": {"type": "string"}},
        "additionalProperties": False,
    }


def string(**keywords):
    return {"type": "string", **keywords}


def number(**keywords):
    return {"type": "number", **keywords}


def array(**keywords):
    return {"type": "array", **keywords}


def array7(**keywords):
    return {"$schema": DRAFT7, "type": "array", **keywords}


INT = {"type": "integer"}
STR = {"type": "string"}

# (id, old, new, kinds of diff(old, new), breaking under STRICT, breaking under LENIENT)
RULES = [
    # ---------------------------------------------------------------- annotations
    (
        "annotations changed",
        {**STR, "$id": "urn:a", "title": "A", "description": "a", "default": "x"},
        {**STR, "$id": "urn:b", "title": "B", "description": "b", "default": "y"},
        {"ID_CHANGED", "TITLE_CHANGED", "DESCRIPTION_CHANGED", "DEFAULT_CHANGED"},
        set(),
        set(),
    ),
    (
        "annotations changed with a type change",
        {**STR, "description": "a"},
        {**INT, "description": "b"},
        {"DESCRIPTION_CHANGED", "TYPE_CHANGED"},
        {"TYPE_CHANGED"},
        {"TYPE_CHANGED"},
    ),
    # ---------------------------------------------------------------- whole schema
    ("schema removed ({})", string(maxLength=3), {}, {"SCHEMA_REMOVED"}, set(), set()),
    ("schema removed (true)", string(maxLength=3), True, {"SCHEMA_REMOVED"}, set(), set()),
    (
        "property schema removed",
        obj(a=STR),
        obj(a={"description": "anything"}),
        {"SCHEMA_REMOVED", "DESCRIPTION_CHANGED"},
        set(),
        set(),
    ),
    ("schema added", {}, STR, {"SCHEMA_ADDED"}, {"SCHEMA_ADDED"}, {"SCHEMA_ADDED"}),
    ("schema to false", STR, False, {"TYPE_CHANGED"}, {"TYPE_CHANGED"}, {"TYPE_CHANGED"}),
    ("false to anything", False, STR, set(), set(), set()),
    # ---------------------------------------------------------------- types
    ("integer to number", INT, {"type": "number"}, {"TYPE_EXTENDED"}, set(), set()),
    ("type gains null", STR, {"type": ["string", "null"]}, {"TYPE_EXTENDED"}, set(), set()),
    (
        "type constraint removed",
        STR,
        {"maxLength": 3},
        {"TYPE_EXTENDED", "MAX_LENGTH_ADDED"},
        {"MAX_LENGTH_ADDED"},
        {"MAX_LENGTH_ADDED"},
    ),
    ("one-element union equals its member", {"type": ["string"]}, STR, set(), set(), set()),
    ("one-element anyOf equals its member", {"anyOf": [STR]}, STR, set(), set(), set()),
    (
        "one-element allOf explains with its member",
        STR,
        {"allOf": [{"type": "integer"}]},
        {"TYPE_CHANGED"},
        {"TYPE_CHANGED"},
        {"TYPE_CHANGED"},
    ),
    (
        "number to integer",
        {"type": "number"},
        INT,
        {"TYPE_NARROWED"},
        {"TYPE_NARROWED"},
        {"TYPE_NARROWED"},
    ),
    (
        "type loses null",
        {"type": ["string", "null"]},
        STR,
        {"TYPE_NARROWED"},
        {"TYPE_NARROWED"},
        {"TYPE_NARROWED"},
    ),
    ("string to integer", STR, INT, {"TYPE_CHANGED"}, {"TYPE_CHANGED"}, {"TYPE_CHANGED"}),
    (
        "type added",
        {"maxLength": 3},
        string(maxLength=3),
        {"TYPE_NARROWED"},
        {"TYPE_NARROWED"},
        {"TYPE_NARROWED"},
    ),
    # ---------------------------------------------------------------- strings
    (
        "maxLength raised",
        string(maxLength=5),
        string(maxLength=9),
        {"MAX_LENGTH_INCREASED"},
        set(),
        set(),
    ),
    ("maxLength removed", string(maxLength=5), STR, {"MAX_LENGTH_REMOVED"}, set(), set()),
    (
        "maxLength lowered",
        string(maxLength=5),
        string(maxLength=3),
        {"MAX_LENGTH_DECREASED"},
        {"MAX_LENGTH_DECREASED"},
        {"MAX_LENGTH_DECREASED"},
    ),
    (
        "maxLength added",
        STR,
        string(maxLength=3),
        {"MAX_LENGTH_ADDED"},
        {"MAX_LENGTH_ADDED"},
        {"MAX_LENGTH_ADDED"},
    ),
    (
        "minLength lowered",
        string(minLength=5),
        string(minLength=1),
        {"MIN_LENGTH_DECREASED"},
        set(),
        set(),
    ),
    ("minLength removed", string(minLength=5), STR, {"MIN_LENGTH_REMOVED"}, set(), set()),
    (
        "minLength raised",
        string(minLength=1),
        string(minLength=5),
        {"MIN_LENGTH_INCREASED"},
        {"MIN_LENGTH_INCREASED"},
        {"MIN_LENGTH_INCREASED"},
    ),
    (
        "minLength added",
        STR,
        string(minLength=1),
        {"MIN_LENGTH_ADDED"},
        {"MIN_LENGTH_ADDED"},
        {"MIN_LENGTH_ADDED"},
    ),
    ("pattern removed", string(pattern="^a"), STR, {"PATTERN_REMOVED"}, set(), set()),
    (
        "pattern added",
        STR,
        string(pattern="^a"),
        {"PATTERN_ADDED"},
        {"PATTERN_ADDED"},
        {"PATTERN_ADDED"},
    ),
    (
        "pattern changed",
        string(pattern="^a"),
        string(pattern="^b"),
        {"PATTERN_CHANGED"},
        {"PATTERN_CHANGED"},
        {"PATTERN_CHANGED"},
    ),
    # ---------------------------------------------------------------- numbers
    ("maximum raised", number(maximum=5), number(maximum=9), {"MAXIMUM_INCREASED"}, set(), set()),
    ("maximum removed", number(maximum=5), number(), {"MAXIMUM_REMOVED"}, set(), set()),
    (
        "maximum lowered",
        number(maximum=5),
        number(maximum=1),
        {"MAXIMUM_DECREASED"},
        {"MAXIMUM_DECREASED"},
        {"MAXIMUM_DECREASED"},
    ),
    (
        "maximum added",
        number(),
        number(maximum=1),
        {"MAXIMUM_ADDED"},
        {"MAXIMUM_ADDED"},
        {"MAXIMUM_ADDED"},
    ),
    (
        "exclusiveMaximum raised",
        number(exclusiveMaximum=5),
        number(exclusiveMaximum=6),
        {"EXCLUSIVE_MAXIMUM_INCREASED"},
        set(),
        set(),
    ),
    (
        "exclusiveMaximum removed",
        number(exclusiveMaximum=5),
        number(),
        {"EXCLUSIVE_MAXIMUM_REMOVED"},
        set(),
        set(),
    ),
    (
        "exclusiveMaximum lowered",
        number(exclusiveMaximum=5),
        number(exclusiveMaximum=4),
        {"EXCLUSIVE_MAXIMUM_DECREASED"},
        {"EXCLUSIVE_MAXIMUM_DECREASED"},
        {"EXCLUSIVE_MAXIMUM_DECREASED"},
    ),
    (
        "exclusiveMaximum added",
        number(),
        number(exclusiveMaximum=4),
        {"EXCLUSIVE_MAXIMUM_ADDED"},
        {"EXCLUSIVE_MAXIMUM_ADDED"},
        {"EXCLUSIVE_MAXIMUM_ADDED"},
    ),
    ("minimum lowered", number(minimum=5), number(minimum=-1), {"MINIMUM_DECREASED"}, set(), set()),
    ("minimum removed", number(minimum=5), number(), {"MINIMUM_REMOVED"}, set(), set()),
    (
        "minimum raised",
        number(minimum=5),
        number(minimum=6),
        {"MINIMUM_INCREASED"},
        {"MINIMUM_INCREASED"},
        {"MINIMUM_INCREASED"},
    ),
    (
        "minimum added",
        number(),
        number(minimum=0),
        {"MINIMUM_ADDED"},
        {"MINIMUM_ADDED"},
        {"MINIMUM_ADDED"},
    ),
    (
        "exclusiveMinimum lowered",
        number(exclusiveMinimum=5),
        number(exclusiveMinimum=0),
        {"EXCLUSIVE_MINIMUM_DECREASED"},
        set(),
        set(),
    ),
    (
        "exclusiveMinimum removed",
        number(exclusiveMinimum=5),
        number(),
        {"EXCLUSIVE_MINIMUM_REMOVED"},
        set(),
        set(),
    ),
    (
        "exclusiveMinimum raised",
        number(exclusiveMinimum=0),
        number(exclusiveMinimum=5),
        {"EXCLUSIVE_MINIMUM_INCREASED"},
        {"EXCLUSIVE_MINIMUM_INCREASED"},
        {"EXCLUSIVE_MINIMUM_INCREASED"},
    ),
    (
        "exclusiveMinimum added",
        number(),
        number(exclusiveMinimum=0),
        {"EXCLUSIVE_MINIMUM_ADDED"},
        {"EXCLUSIVE_MINIMUM_ADDED"},
        {"EXCLUSIVE_MINIMUM_ADDED"},
    ),
    (
        "multipleOf reduced to a divisor",
        number(multipleOf=4),
        number(multipleOf=2),
        {"MULTIPLE_OF_REDUCED"},
        set(),
        set(),
    ),
    (
        "multipleOf reduced, decimals",
        number(multipleOf=0.5),
        number(multipleOf=0.1),
        {"MULTIPLE_OF_REDUCED"},
        set(),
        set(),
    ),
    ("multipleOf removed", number(multipleOf=4), number(), {"MULTIPLE_OF_REMOVED"}, set(), set()),
    (
        "multipleOf expanded",
        number(multipleOf=2),
        number(multipleOf=4),
        {"MULTIPLE_OF_EXPANDED"},
        {"MULTIPLE_OF_EXPANDED"},
        {"MULTIPLE_OF_EXPANDED"},
    ),
    (
        "multipleOf changed",
        number(multipleOf=4),
        number(multipleOf=3),
        {"MULTIPLE_OF_CHANGED"},
        {"MULTIPLE_OF_CHANGED"},
        {"MULTIPLE_OF_CHANGED"},
    ),
    (
        "multipleOf added",
        number(),
        number(multipleOf=3),
        {"MULTIPLE_OF_ADDED"},
        {"MULTIPLE_OF_ADDED"},
        {"MULTIPLE_OF_ADDED"},
    ),
    # ---------------------------------------------------------------- required
    (
        "required entry removed",
        obj(["a"], a=STR),
        obj(a=STR),
        {"REQUIRED_ATTRIBUTE_REMOVED"},
        set(),
        set(),
    ),
    (
        "required entry added, property has a default",
        obj(a={**STR, "default": "x"}),
        obj(["a"], a={**STR, "default": "x"}),
        {"REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"},
        set(),
        set(),
    ),
    (
        "required entry added, no default",
        obj(a=STR),
        obj(["a"], a=STR),
        {"REQUIRED_ATTRIBUTE_ADDED"},
        {"REQUIRED_ATTRIBUTE_ADDED"},
        {"REQUIRED_ATTRIBUTE_ADDED"},
    ),
    (
        "required entry added for a property only the old schema declares",
        obj(a=STR),
        {"type": "object", "required": ["a"]},
        {"REQUIRED_ATTRIBUTE_ADDED", "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL"},
        {"REQUIRED_ATTRIBUTE_ADDED"},
        {"REQUIRED_ATTRIBUTE_ADDED"},
    ),
    (
        # the reference registry compares required names of declared properties only
        "required entry added for a name no property declares",
        obj(a=STR),
        obj(["b"], a=STR),
        set(),
        set(),
        set(),
    ),
    # ---------------------------------------------------------------- dependencies
    (
        "dependencies array narrowed",
        {"dependencies": {"a": ["b", "c"]}},
        {"dependencies": {"a": ["b"]}},
        {"DEPENDENCY_ARRAY_NARROWED"},
        set(),
        set(),
    ),
    (
        "dependencies array removed",
        {"dependencies": {"a": ["b"]}, "type": "object"},
        {"type": "object"},
        {"DEPENDENCY_ARRAY_REMOVED"},
        set(),
        set(),
    ),
    (
        "dependentRequired narrowed (2020-12)",
        {"dependentRequired": {"a": ["b", "c"]}},
        {"dependentRequired": {"a": ["c"]}},
        {"DEPENDENCY_ARRAY_NARROWED"},
        set(),
        set(),
    ),
    (
        "dependencies array extended",
        {"dependencies": {"a": ["b"]}},
        {"dependencies": {"a": ["b", "c"]}},
        {"DEPENDENCY_ARRAY_EXTENDED"},
        {"DEPENDENCY_ARRAY_EXTENDED"},
        {"DEPENDENCY_ARRAY_EXTENDED"},
    ),
    (
        "dependencies array changed",
        {"dependencies": {"a": ["b"]}},
        {"dependencies": {"a": ["c"]}},
        {"DEPENDENCY_ARRAY_CHANGED"},
        {"DEPENDENCY_ARRAY_CHANGED"},
        {"DEPENDENCY_ARRAY_CHANGED"},
    ),
    (
        "dependencies array added",
        {"type": "object"},
        {"type": "object", "dependentRequired": {"a": ["b"]}},
        {"DEPENDENCY_ARRAY_ADDED"},
        {"DEPENDENCY_ARRAY_ADDED"},
        {"DEPENDENCY_ARRAY_ADDED"},
    ),
    (
        "dependency schema removed",
        {"type": "object", "dependencies": {"a": {"required": ["b"]}}},
        {"type": "object"},
        {"DEPENDENCY_SCHEMA_REMOVED"},
        set(),
        set(),
    ),
    (
        "dependency schema added",
        {"type": "object"},
        {"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}},
        {"DEPENDENCY_SCHEMA_ADDED"},
        {"DEPENDENCY_SCHEMA_ADDED"},
        {"DEPENDENCY_SCHEMA_ADDED"},
    ),
    (
        "dependency schema tightened",
        {"type": "object", "dependentSchemas": {"a": {"maxProperties": 3}}},
        {"type": "object", "dependentSchemas": {"a": {"maxProperties": 2}}},
        {"MAX_PROPERTIES_DECREASED"},
        {"MAX_PROPERTIES_DECREASED"},
        {"MAX_PROPERTIES_DECREASED"},
    ),
    # ---------------------------------------------------------------- property counts
    (
        "maxProperties raised",
        {"maxProperties": 2},
        {"maxProperties": 3},
        {"MAX_PROPERTIES_INCREASED"},
        set(),
        set(),
    ),
    (
        "maxProperties removed",
        {"maxProperties": 2, "type": "object"},
        {"type": "object"},
        {"MAX_PROPERTIES_REMOVED"},
        set(),
        set(),
    ),
    (
        "maxProperties lowered",
        {"maxProperties": 2},
        {"maxProperties": 1},
        {"MAX_PROPERTIES_DECREASED"},
        {"MAX_PROPERTIES_DECREASED"},
        {"MAX_PROPERTIES_DECREASED"},
    ),
    (
        "maxProperties added",
        {"type": "object"},
        {"type": "object", "maxProperties": 1},
        {"MAX_PROPERTIES_ADDED"},
        {"MAX_PROPERTIES_ADDED"},
        {"MAX_PROPERTIES_ADDED"},
    ),
    (
        "minProperties lowered",
        {"minProperties": 2},
        {"minProperties": 1},
        {"MIN_PROPERTIES_DECREASED"},
        set(),
        set(),
    ),
    (
        "minProperties removed",
        {"minProperties": 2, "type": "object"},
        {"type": "object"},
        {"MIN_PROPERTIES_REMOVED"},
        set(),
        set(),
    ),
    (
        "minProperties raised",
        {"minProperties": 1},
        {"minProperties": 2},
        {"MIN_PROPERTIES_INCREASED"},
        {"MIN_PROPERTIES_INCREASED"},
        {"MIN_PROPERTIES_INCREASED"},
    ),
    (
        "minProperties added",
        {"type": "object"},
        {"type": "object", "minProperties": 1},
        {"MIN_PROPERTIES_ADDED"},
        {"MIN_PROPERTIES_ADDED"},
        {"MIN_PROPERTIES_ADDED"},
    ),
    # ---------------------------------------------------------------- additionalProperties
    (
        "additionalProperties false to true",
        closed(a=STR),
        {**obj(a=STR), "additionalProperties": True},
        {"ADDITIONAL_PROPERTIES_ADDED"},
        set(),
        set(),
    ),
    (
        "additionalProperties false removed",
        closed(a=STR),
        obj(a=STR),
        {"ADDITIONAL_PROPERTIES_ADDED"},
        set(),
        set(),
    ),
    (
        "additionalProperties schema to true",
        partial(STR, a=STR),
        obj(a=STR),
        {"ADDITIONAL_PROPERTIES_EXTENDED"},
        set(),
        set(),
    ),
    (
        "additionalProperties widened",
        partial(STR),
        partial({"type": ["string", "null"]}),
        {"TYPE_EXTENDED"},
        set(),
        set(),
    ),
    (
        "additionalProperties true to false",
        obj(a=STR),
        closed(a=STR),
        {"ADDITIONAL_PROPERTIES_REMOVED"},
        {"ADDITIONAL_PROPERTIES_REMOVED"},
        set(),
    ),
    (
        "additionalProperties true to a schema",
        obj(a=STR),
        partial(STR, a=STR),
        {"ADDITIONAL_PROPERTIES_NARROWED"},
        {"ADDITIONAL_PROPERTIES_NARROWED"},
        set(),
    ),
    (
        # a schema against a schema is compared as any two schemas are, as the reference does
        "additionalProperties schema narrowed",
        partial({"type": ["string", "null"]}),
        partial(STR),
        {"TYPE_NARROWED"},
        {"TYPE_NARROWED"},
        {"TYPE_NARROWED"},
    ),
    (
        "unevaluatedProperties false to true",
        {**obj(a=STR), "unevaluatedProperties": False},
        {**obj(a=STR), "unevaluatedProperties": True},
        {"UNEVALUATED_PROPERTIES_ADDED"},
        set(),
        set(),
    ),
    (
        "unevaluatedProperties true to false",
        obj(a=STR),
        {**obj(a=STR), "unevaluatedProperties": False},
        {"UNEVALUATED_PROPERTIES_REMOVED"},
        {"UNEVALUATED_PROPERTIES_REMOVED"},
        set(),
    ),
    # ---------------------------------------------------------------- open content model
    (
        "property with {} added to open model",
        obj(a=STR),
        obj(a=STR, b={}),
        {"PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "property with true added to open model",
        obj(a=STR),
        obj(a=STR, b=True),
        {"PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "optional property added to open model",
        obj(a=STR),
        obj(a=STR, b=INT),
        {"OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
        {"OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
        set(),
    ),
    (
        "required property with a default added to open model",
        obj(a=STR),
        obj(["b"], a=STR, b={**INT, "default": 0}),
        {"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"},
        {"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"},
        set(),
    ),
    (
        "required property without a default added to open model",
        obj(a=STR),
        obj(["b"], a=STR, b=INT),
        {"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
        {"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
        {"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
    ),
    (
        "required property with {} and no default added to open model",
        obj(a=STR),
        obj(["b"], a=STR, b={}),
        {"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
        {"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
        {"REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"},
    ),
    (
        "property removed from open model",
        obj(a=STR, b=INT),
        obj(a=STR),
        {"PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    # ---------------------------------------------------------------- closed content model
    (
        "optional property added to closed model",
        closed(a=STR),
        closed(a=STR, b=INT),
        {"OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "required property with a default added to closed model",
        closed(a=STR),
        closed(["b"], a=STR, b={**INT, "default": 1}),
        {"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "required property without a default added to closed model",
        closed(a=STR),
        closed(["b"], a=STR, b=INT),
        {"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
        {"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
        {"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
    ),
    (
        "property with false removed from closed model",
        closed(a=STR, b=False),
        closed(a=STR),
        {"PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "property removed from closed model",
        closed(a=STR, b=INT),
        closed(a=STR),
        {"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
        {"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
        set(),
    ),
    # ---------------------------------------------------------------- partially open model
    (
        "property added, narrower than additionalProperties",
        partial(STR, a=INT),
        partial(STR, a=INT, b=string(maxLength=3)),
        {
            "MAX_LENGTH_ADDED",
            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        },
        {"MAX_LENGTH_ADDED", "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"MAX_LENGTH_ADDED"},
    ),
    (
        "property added, narrower than additionalProperties only in LENIENT's terms",
        partial({"type": "object"}, a=INT),
        partial({"type": "object"}, a=INT, b=obj(c=STR)),
        {
            "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        },
        {
            "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        },
        set(),
    ),
    (
        "property added, same schema as additionalProperties",
        partial(STR, a=INT),
        partial(STR, a=INT, b=STR),
        {
            "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        },
        set(),
        set(),
    ),
    (
        "property added, wider than additionalProperties",
        partial(STR, a=INT),
        partial(STR, a=INT, b={"type": ["string", "null"]}),
        {
            "TYPE_EXTENDED",
            "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        },
        set(),
        set(),
    ),
    (
        "property added, not covered by additionalProperties",
        partial(STR, a=INT),
        partial(STR, a=INT, b=INT),
        {
            "TYPE_CHANGED",
            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        },
        {"TYPE_CHANGED", "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"TYPE_CHANGED"},
    ),
    (
        "required property added to partially open model",
        partial(STR, a=INT),
        partial(STR, ["b"], a=INT, b=STR),
        {
            "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
            "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        },
        {"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
        {"REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
    ),
    (
        "property removed, covered by additionalProperties",
        partial(STR, a=INT, b=string(maxLength=3)),
        partial(STR, a=INT),
        {"MAX_LENGTH_REMOVED", "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "property removed, not covered by additionalProperties",
        partial(STR, a=INT, b=INT),
        partial(STR, a=INT),
        {"TYPE_CHANGED", "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"TYPE_CHANGED", "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"TYPE_CHANGED"},
    ),
    (
        "property added, covered by patternProperties",
        patterned(a=INT),
        patterned(a=INT, x_b=STR),
        {
            "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        },
        set(),
        set(),
    ),
    (
        "property added, not covered by patternProperties",
        patterned(a=INT),
        patterned(a=INT, x_b=INT),
        {
            "TYPE_CHANGED",
            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        },
        {"TYPE_CHANGED", "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"TYPE_CHANGED"},
    ),
    (
        "property added outside patternProperties, additionalProperties false",
        patterned(a=INT),
        patterned(a=INT, b=INT),
        {"OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "property removed, covered by patternProperties",
        patterned(a=INT, x_b=STR),
        patterned(a=INT),
        {"PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "property removed, not covered by patternProperties",
        patterned(a=INT, x_b=INT),
        patterned(a=INT),
        {"TYPE_CHANGED", "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"TYPE_CHANGED", "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"TYPE_CHANGED"},
    ),
    # ---------------------------------------------------------------- array bounds
    (
        "maxItems raised",
        array(maxItems=2),
        array(maxItems=3),
        {"MAX_ITEMS_INCREASED"},
        set(),
        set(),
    ),
    ("maxItems removed", array(maxItems=2), array(), {"MAX_ITEMS_REMOVED"}, set(), set()),
    (
        "maxItems lowered",
        array(maxItems=2),
        array(maxItems=1),
        {"MAX_ITEMS_DECREASED"},
        {"MAX_ITEMS_DECREASED"},
        {"MAX_ITEMS_DECREASED"},
    ),
    (
        "maxItems added",
        array(),
        array(maxItems=1),
        {"MAX_ITEMS_ADDED"},
        {"MAX_ITEMS_ADDED"},
        {"MAX_ITEMS_ADDED"},
    ),
    (
        "minItems lowered",
        array(minItems=2),
        array(minItems=1),
        {"MIN_ITEMS_DECREASED"},
        set(),
        set(),
    ),
    ("minItems removed", array(minItems=2), array(), {"MIN_ITEMS_REMOVED"}, set(), set()),
    (
        "minItems raised",
        array(minItems=1),
        array(minItems=2),
        {"MIN_ITEMS_INCREASED"},
        {"MIN_ITEMS_INCREASED"},
        {"MIN_ITEMS_INCREASED"},
    ),
    (
        "minItems added",
        array(),
        array(minItems=2),
        {"MIN_ITEMS_ADDED"},
        {"MIN_ITEMS_ADDED"},
        {"MIN_ITEMS_ADDED"},
    ),
    (
        "maxContains raised",
        array(contains=INT, maxContains=2),
        array(contains=INT, maxContains=3),
        {"MAX_CONTAINS_INCREASED"},
        set(),
        set(),
    ),
    (
        "maxContains removed",
        array(contains=INT, maxContains=2),
        array(contains=INT),
        {"MAX_CONTAINS_REMOVED"},
        set(),
        set(),
    ),
    (
        "maxContains lowered",
        array(contains=INT, maxContains=2),
        array(contains=INT, maxContains=1),
        {"MAX_CONTAINS_DECREASED"},
        {"MAX_CONTAINS_DECREASED"},
        {"MAX_CONTAINS_DECREASED"},
    ),
    (
        "minContains lowered",
        array(contains=INT, minContains=2),
        array(contains=INT, minContains=1),
        {"MIN_CONTAINS_DECREASED"},
        set(),
        set(),
    ),
    (
        "minContains removed",
        array(contains=INT, minContains=2),
        array(contains=INT),
        {"MIN_CONTAINS_REMOVED"},
        set(),
        set(),
    ),
    (
        "minContains raised",
        array(contains=INT, minContains=1),
        array(contains=INT, minContains=2),
        {"MIN_CONTAINS_INCREASED"},
        {"MIN_CONTAINS_INCREASED"},
        {"MIN_CONTAINS_INCREASED"},
    ),
    (
        "minContains added",
        array(contains=INT),
        array(contains=INT, minContains=2),
        {"MIN_CONTAINS_ADDED"},
        {"MIN_CONTAINS_ADDED"},
        {"MIN_CONTAINS_ADDED"},
    ),
    ("contains removed", array(contains=INT), array(), {"SCHEMA_REMOVED"}, set(), set()),
    (
        "contains added",
        array(),
        array(contains=INT),
        {"SCHEMA_ADDED"},
        {"SCHEMA_ADDED"},
        {"SCHEMA_ADDED"},
    ),
    (
        "uniqueItems removed",
        array(uniqueItems=True),
        array(),
        {"UNIQUE_ITEMS_REMOVED"},
        set(),
        set(),
    ),
    (
        "uniqueItems added",
        array(),
        array(uniqueItems=True),
        {"UNIQUE_ITEMS_ADDED"},
        {"UNIQUE_ITEMS_ADDED"},
        {"UNIQUE_ITEMS_ADDED"},
    ),
    (
        "items widened",
        array(items=INT),
        array(items={"type": "number"}),
        {"TYPE_EXTENDED"},
        set(),
        set(),
    ),
    (
        "items changed",
        array(items=INT),
        array(items=STR),
        {"TYPE_CHANGED"},
        {"TYPE_CHANGED"},
        {"TYPE_CHANGED"},
    ),
    ("items removed", array(items=INT), array(), {"SCHEMA_REMOVED"}, set(), set()),
    (
        "items added",
        array(),
        array(items=INT),
        {"SCHEMA_ADDED"},
        {"SCHEMA_ADDED"},
        {"SCHEMA_ADDED"},
    ),
    # ---------------------------------------------------------------- additionalItems
    (
        "additionalItems false to true (Draft 7 tuple)",
        array7(items=[STR], additionalItems=False),
        array7(items=[STR], additionalItems=True),
        {"ADDITIONAL_ITEMS_ADDED"},
        set(),
        set(),
    ),
    (
        "additionalItems schema removed",
        array7(items=[STR], additionalItems=INT),
        array7(items=[STR]),
        {"ADDITIONAL_ITEMS_EXTENDED"},
        set(),
        set(),
    ),
    (
        "additionalItems widened",
        array7(items=[STR], additionalItems=INT),
        array7(items=[STR], additionalItems={"type": "number"}),
        {"TYPE_EXTENDED"},
        set(),
        set(),
    ),
    (
        "rest items added where they were false (2020-12 prefixItems)",
        array(prefixItems=[STR], items=False),
        array(prefixItems=[STR], items=INT),
        {"ADDITIONAL_ITEMS_ADDED"},
        set(),
        set(),
    ),
    (
        "additionalItems true to false",
        array7(items=[STR]),
        array7(items=[STR], additionalItems=False),
        {"ADDITIONAL_ITEMS_REMOVED"},
        {"ADDITIONAL_ITEMS_REMOVED"},
        {"ADDITIONAL_ITEMS_REMOVED"},
    ),
    (
        "additionalItems schema added",
        array7(items=[STR]),
        array7(items=[STR], additionalItems=INT),
        {"ADDITIONAL_ITEMS_NARROWED"},
        {"ADDITIONAL_ITEMS_NARROWED"},
        {"ADDITIONAL_ITEMS_NARROWED"},
    ),
    (
        "unevaluatedItems false to true",
        array(unevaluatedItems=False),
        array(unevaluatedItems=True),
        {"UNEVALUATED_ITEMS_ADDED"},
        set(),
        set(),
    ),
    (
        "unevaluatedItems true to false",
        array(),
        array(unevaluatedItems=False),
        {"UNEVALUATED_ITEMS_REMOVED"},
        {"UNEVALUATED_ITEMS_REMOVED"},
        {"UNEVALUATED_ITEMS_REMOVED"},
    ),
    # ---------------------------------------------------------------- tuple content models
    (
        "item with {} added to open tuple",
        array(prefixItems=[STR]),
        array(prefixItems=[STR, {}]),
        {"ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "item added to open tuple",
        array(prefixItems=[STR]),
        array(prefixItems=[STR, INT]),
        {"ITEM_ADDED_TO_OPEN_CONTENT_MODEL"},
        {"ITEM_ADDED_TO_OPEN_CONTENT_MODEL"},
        {"ITEM_ADDED_TO_OPEN_CONTENT_MODEL"},
    ),
    (
        "item added to closed tuple",
        array(prefixItems=[STR], items=False),
        array(prefixItems=[STR, INT], items=False),
        {"ITEM_ADDED_TO_CLOSED_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "item with false removed from closed tuple",
        array(prefixItems=[STR, False], items=False),
        array(prefixItems=[STR], items=False),
        {"ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "item removed from closed tuple",
        array(prefixItems=[STR, INT], items=False),
        array(prefixItems=[STR], items=False),
        {"ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
        {"ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
        {"ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"},
    ),
    (
        "item removed from open tuple",
        array(prefixItems=[STR, INT]),
        array(prefixItems=[STR]),
        {"ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "item added, covered by the rest schema",
        array(prefixItems=[STR], items=INT),
        array(prefixItems=[STR, INT], items=INT),
        {"ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "item added, not covered by the rest schema",
        array(prefixItems=[STR], items=INT),
        array(prefixItems=[STR, STR], items=INT),
        {"TYPE_CHANGED", "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"TYPE_CHANGED", "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"TYPE_CHANGED", "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
    ),
    (
        "item removed, covered by the rest schema",
        array(prefixItems=[STR, INT], items=INT),
        array(prefixItems=[STR], items=INT),
        {"ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        set(),
        set(),
    ),
    (
        "item removed, not covered by the rest schema",
        array(prefixItems=[STR, STR], items=INT),
        array(prefixItems=[STR], items=INT),
        {"TYPE_CHANGED", "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"TYPE_CHANGED", "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
        {"TYPE_CHANGED", "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"},
    ),
    (
        "tuple item changed",
        array(prefixItems=[STR]),
        array(prefixItems=[INT]),
        {"TYPE_CHANGED"},
        {"TYPE_CHANGED"},
        {"TYPE_CHANGED"},
    ),
    # ---------------------------------------------------------------- enums
    (
        "enum values added",
        {"enum": ["a"]},
        {"enum": ["a", "b"]},
        {"ENUM_ARRAY_EXTENDED"},
        set(),
        set(),
    ),
    (
        "const widened to enum",
        {"const": "a"},
        {"enum": ["a", "b"]},
        {"ENUM_ARRAY_EXTENDED"},
        set(),
        set(),
    ),
    ("enum removed", {**STR, "enum": ["a"]}, STR, {"ENUM_ARRAY_EXTENDED"}, set(), set()),
    (
        "enum values removed",
        {"enum": ["a", "b"]},
        {"enum": ["a"]},
        {"ENUM_ARRAY_NARROWED"},
        {"ENUM_ARRAY_NARROWED"},
        {"ENUM_ARRAY_NARROWED"},
    ),
    (
        "enum added",
        STR,
        {**STR, "enum": ["a"]},
        {"ENUM_ARRAY_NARROWED"},
        {"ENUM_ARRAY_NARROWED"},
        {"ENUM_ARRAY_NARROWED"},
    ),
    (
        "enum values replaced",
        {"enum": ["a", "b"]},
        {"enum": ["a", "c"]},
        {"ENUM_ARRAY_CHANGED"},
        {"ENUM_ARRAY_CHANGED"},
        {"ENUM_ARRAY_CHANGED"},
    ),
    (
        "const changed",
        {"const": 1},
        {"const": 2},
        {"ENUM_ARRAY_CHANGED"},
        {"ENUM_ARRAY_CHANGED"},
        {"ENUM_ARRAY_CHANGED"},
    ),
    (
        "1 is not true",
        {"enum": [1]},
        {"enum": [True]},
        {"ENUM_ARRAY_CHANGED"},
        {"ENUM_ARRAY_CHANGED"},
        {"ENUM_ARRAY_CHANGED"},
    ),
    ("1 is 1.0", {"enum": [1, {"k": [1]}]}, {"enum": [1.0, {"k": [1]}]}, set(), set(), set()),
    # ---------------------------------------------------------------- combinators
    (
        "anyOf gains a branch",
        {"anyOf": [STR, INT]},
        {"anyOf": [STR, INT, {"type": "null"}]},
        {"SUM_TYPE_EXTENDED"},
        set(),
        set(),
    ),
    (
        "oneOf gains a branch",
        {"oneOf": [STR, INT]},
        {"oneOf": [STR, INT, {"type": "null"}]},
        {"SUM_TYPE_EXTENDED"},
        set(),
        set(),
    ),
    (
        "anyOf loses a branch",
        {"anyOf": [STR, INT]},
        {"anyOf": [STR]},
        {"SUM_TYPE_NARROWED"},
        {"SUM_TYPE_NARROWED"},
        {"SUM_TYPE_NARROWED"},
    ),
    (
        "oneOf loses a branch",
        {"oneOf": [STR, INT, {"type": "null"}]},
        {"oneOf": [STR, INT]},
        {"SUM_TYPE_NARROWED"},
        {"SUM_TYPE_NARROWED"},
        {"SUM_TYPE_NARROWED"},
    ),
    (
        "anyOf branch widened",
        {"anyOf": [string(maxLength=3), INT]},
        {"anyOf": [STR, INT]},
        {"MAX_LENGTH_REMOVED"},
        set(),
        set(),
    ),
    (
        "anyOf branch replaced",
        {"anyOf": [STR, INT]},
        {"anyOf": [STR, {"type": "boolean"}]},
        {"COMBINED_TYPE_SUBSCHEMAS_CHANGED"},
        {"COMBINED_TYPE_SUBSCHEMAS_CHANGED"},
        {"COMBINED_TYPE_SUBSCHEMAS_CHANGED"},
    ),
    (
        "allOf loses a member",
        {"allOf": [obj(a=STR), {"required": ["a"]}]},
        {"allOf": [obj(a=STR)]},
        {"PRODUCT_TYPE_NARROWED"},
        set(),
        set(),
    ),
    (
        "allOf gains a member",
        {"allOf": [obj(a=STR)]},
        {"allOf": [obj(a=STR), {"required": ["a"]}]},
        {"PRODUCT_TYPE_EXTENDED"},
        {"PRODUCT_TYPE_EXTENDED"},
        {"PRODUCT_TYPE_EXTENDED"},
    ),
    (
        "allOf to one of its members",
        {"allOf": [obj(a=STR), {"required": ["a"]}]},
        obj(a=STR),
        {"PRODUCT_TYPE_NARROWED"},
        set(),
        set(),
    ),
    (
        "plain to allOf with more",
        obj(a=STR),
        {"allOf": [obj(a=STR), {"required": ["a"]}]},
        {"PRODUCT_TYPE_EXTENDED"},
        {"PRODUCT_TYPE_EXTENDED"},
        {"PRODUCT_TYPE_EXTENDED"},
    ),
    (
        "oneOf to anyOf",
        {"oneOf": [STR, INT]},
        {"anyOf": [STR, INT]},
        {"COMBINED_TYPE_EXTENDED"},
        set(),
        set(),
    ),
    (
        "anyOf to allOf",
        {"anyOf": [STR, INT]},
        {"allOf": [STR, INT]},
        {"COMBINED_TYPE_CHANGED"},
        {"COMBINED_TYPE_CHANGED"},
        {"COMBINED_TYPE_CHANGED"},
    ),
    (
        "plain to a sum containing it",
        STR,
        {"anyOf": [STR, {"type": "null"}]},
        {"SUM_TYPE_EXTENDED"},
        set(),
        set(),
    ),
    (
        "sum to one of its branches",
        {"anyOf": [STR, {"type": "null"}]},
        STR,
        {"SUM_TYPE_NARROWED"},
        {"SUM_TYPE_NARROWED"},
        {"SUM_TYPE_NARROWED"},
    ),
    (
        "type union to the same sum",
        {"type": ["string", "null"]},
        {"anyOf": [STR, {"type": "null"}]},
        set(),
        set(),
        set(),
    ),
    (
        "sum to the same type union",
        {"oneOf": [STR, {"type": "null"}]},
        {"type": ["string", "null"]},
        {"TYPE_EXTENDED"},
        set(),
        set(),
    ),
    (
        "plain to an unrelated sum",
        STR,
        {"anyOf": [INT, {"type": "null"}]},
        {"TYPE_CHANGED"},
        {"TYPE_CHANGED"},
        {"TYPE_CHANGED"},
    ),
    (
        "not narrowed",
        {"not": {"type": ["string", "integer"]}},
        {"not": STR},
        {"NOT_TYPE_NARROWED"},
        set(),
        set(),
    ),
    ("not removed", {**STR, "not": {"const": "x"}}, STR, {"NOT_TYPE_NARROWED"}, set(), set()),
    (
        "not extended",
        {"not": STR},
        {"not": {"type": ["string", "integer"]}},
        {"NOT_TYPE_EXTENDED"},
        {"NOT_TYPE_EXTENDED"},
        {"NOT_TYPE_EXTENDED"},
    ),
    (
        "not added",
        STR,
        {**STR, "not": {"const": "x"}},
        {"NOT_TYPE_EXTENDED"},
        {"NOT_TYPE_EXTENDED"},
        {"NOT_TYPE_EXTENDED"},
    ),
    (
        "if/then loosened",
        {"if": obj(a={"const": 1}), "then": {"required": ["b"]}},
        {"if": obj(a={"const": 1})},
        {"SCHEMA_REMOVED"},
        set(),
        set(),
    ),
    (
        "if/then tightened",
        {"if": obj(a={"const": 1}), "then": {"maxProperties": 3}},
        {"if": obj(a={"const": 1}), "then": {"maxProperties": 2}},
        {"MAX_PROPERTIES_DECREASED"},
        {"MAX_PROPERTIES_DECREASED"},
        {"MAX_PROPERTIES_DECREASED"},
    ),
    (
        "if changed",
        {"if": obj(a={"const": 1}), "then": {"required": ["b"]}},
        {"if": obj(a={"const": 2}), "then": {"required": ["b"]}},
        {"COMBINED_TYPE_CHANGED"},
        {"COMBINED_TYPE_CHANGED"},
        {"COMBINED_TYPE_CHANGED"},
    ),
]


def breaking_kinds(verdict):
    return {d.kind for d in verdict.breaking}


def compatible(verdict, differences):
    """The verdict is compatible and explains itself with exactly these kinds."""
    return verdict.compatible and not verdict.breaking and kinds(verdict.differences) == differences


@pytest.mark.parametrize(
    ("old", "new", "expected", "strict", "lenient"),
    [pytest.param(*row[1:], id=row[0]) for row in RULES],
)
def test_rule(old, new, expected, strict, lenient):
    # given two schemas valid for the registry
    parse_schema(old)
    parse_schema(new)

    # when / then: diff reports the expected kinds ...
    assert kinds(diff(old, new)) == expected
    # ... and a BACKWARD check breaks on exactly the kinds each policy disallows
    for policy, expected_breaking in (("STRICT", strict), ("LENIENT", lenient)):
        verdict = check(new, [old], mode="BACKWARD", policy=policy)
        assert breaking_kinds(verdict) == expected_breaking, policy
        assert verdict.compatible is (not expected_breaking), policy
        assert kinds(verdict.differences) >= expected_breaking
        for d in verdict.breaking:
            assert not is_allowed(d.kind, policy)


def test_every_rule_has_a_compatible_and_a_breaking_row_per_family():
    families = {}
    for _, _, _, expected, strict, _ in RULES:
        for kind in expected:
            family = kind.split("_")[0]
            families.setdefault(family, set()).add(bool(strict))
    one_sided = {f for f, outcomes in families.items() if outcomes != {True, False}}
    assert one_sided <= {"DESCRIPTION", "ID", "TITLE", "DEFAULT"}, one_sided


# --------------------------------------------------------------------------- paths


def test_paths_point_at_the_difference():
    old = obj(address=obj(zip=string(maxLength=5), city=STR))
    new = obj(address=obj(zip=string(maxLength=3), city=STR, line={"type": "string"}))

    found = {(d.kind, d.path) for d in diff(old, new)}

    assert found == {
        ("MAX_LENGTH_DECREASED", "#/properties/address/properties/zip/maxLength"),
        ("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", "#/properties/address/properties/line"),
    }


def test_json_pointer_escapes_property_names():
    found = diff(obj(**{"a/b": STR, "c~d": STR}), obj(**{"a/b": INT, "c~d": INT}))

    assert {(d.kind, d.path) for d in found} == {
        ("TYPE_CHANGED", "#/properties/a~1b"),
        ("TYPE_CHANGED", "#/properties/c~0d"),
    }


def test_required_and_root_paths():
    found = diff(obj(a=STR), {**obj(["a"], a=STR), "description": "now required"})

    assert {(d.kind, d.path) for d in found} == {
        ("REQUIRED_ATTRIBUTE_ADDED", "#/required/a"),
        ("DESCRIPTION_CHANGED", "#"),
    }


def test_each_difference_is_one_sentence_naming_both_schemas():
    verdict = check(closed(["b"], a=STR, b=INT), [closed(a=string(maxLength=3))], mode="FULL")

    assert breaking_kinds(verdict) == {
        "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "MAX_LENGTH_ADDED",
    }
    for d in verdict.differences:
        assert d.message.endswith(".") and d.message.count(". ") == 0
        assert "old" in d.message or "new" in d.message or d.kind == "MAX_LENGTH_ADDED"


# --------------------------------------------------------------------------- modes

RAISED = (string(maxLength=5), string(maxLength=9))  # backward compatible only
LOWERED = (string(maxLength=9), string(maxLength=5))  # forward compatible only
DOCUMENTED = (STR, {**STR, "description": "a name"})  # fully compatible


@pytest.mark.parametrize(
    ("change", "mode", "expected_breaking"),
    [
        (RAISED, "BACKWARD", set()),
        (RAISED, "BACKWARD_TRANSITIVE", set()),
        (RAISED, "FORWARD", {"MAX_LENGTH_DECREASED"}),
        (RAISED, "FORWARD_TRANSITIVE", {"MAX_LENGTH_DECREASED"}),
        (RAISED, "FULL", {"MAX_LENGTH_DECREASED"}),
        (RAISED, "FULL_TRANSITIVE", {"MAX_LENGTH_DECREASED"}),
        (RAISED, "NONE", set()),
        (LOWERED, "BACKWARD", {"MAX_LENGTH_DECREASED"}),
        (LOWERED, "BACKWARD_TRANSITIVE", {"MAX_LENGTH_DECREASED"}),
        (LOWERED, "FORWARD", set()),
        (LOWERED, "FORWARD_TRANSITIVE", set()),
        (LOWERED, "FULL", {"MAX_LENGTH_DECREASED"}),
        (LOWERED, "FULL_TRANSITIVE", {"MAX_LENGTH_DECREASED"}),
        (LOWERED, "NONE", set()),
        (DOCUMENTED, "BACKWARD", set()),
        (DOCUMENTED, "FORWARD", set()),
        (DOCUMENTED, "FULL", set()),
        (DOCUMENTED, "FULL_TRANSITIVE", set()),
        (DOCUMENTED, "NONE", set()),
    ],
)
@pytest.mark.parametrize("policy", POLICIES)
def test_modes(change, mode, expected_breaking, policy):
    old, new = change

    verdict = check(new, [old], mode=mode, policy=policy)

    assert verdict.mode == mode and verdict.policy == policy
    assert breaking_kinds(verdict) == expected_breaking
    assert verdict.compatible is (not expected_breaking)
    if mode == "NONE":
        assert verdict.differences == ()


@pytest.mark.parametrize("mode", MODES)
def test_first_version_is_always_compatible(mode):
    verdict = check(STR, [], mode=mode)

    assert verdict.compatible and verdict.differences == () and verdict.breaking == ()


def test_full_reports_both_directions():
    old, new = closed(a=STR), closed(a=STR, b=INT)

    backward = check(new, [old], mode="BACKWARD")
    forward = check(new, [old], mode="FORWARD")
    full = check(new, [old], mode="FULL")

    assert backward.compatible and breaking_kinds(backward) == set()
    assert breaking_kinds(forward) == {"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"}
    assert kinds(full.differences) == {
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    }
    assert breaking_kinds(full) == {"PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"}
    lenient = check(new, [old], mode="FULL", policy="LENIENT")
    assert compatible(
        lenient,
        {
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
            "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        },
    )


# v1 was published under NONE; v2 changed a's type; the candidate only documents v2
V1 = obj(a=INT)
V2 = obj(a=STR)
V3 = obj(a={**STR, "description": "the a"})


@pytest.mark.parametrize(
    ("mode", "expected_breaking"),
    [
        ("BACKWARD", set()),
        ("BACKWARD_TRANSITIVE", {"TYPE_CHANGED"}),
        ("FORWARD", set()),
        ("FORWARD_TRANSITIVE", {"TYPE_CHANGED"}),
        ("FULL", set()),
        ("FULL_TRANSITIVE", {"TYPE_CHANGED"}),
        ("NONE", set()),
    ],
)
def test_transitive_modes_check_every_earlier_version(mode, expected_breaking):
    verdict = check(V3, [V1, V2], mode=mode)

    assert breaking_kinds(verdict) == expected_breaking
    assert verdict.compatible is (not expected_breaking)
    if expected_breaking:
        assert [d.path for d in verdict.breaking] == ["#/properties/a"]


def test_transitive_differences_are_deduplicated_over_versions():
    verdict = check(V3, [V2, copy.deepcopy(V2), copy.deepcopy(V2)], mode="FULL_TRANSITIVE")

    assert [(d.kind, d.path) for d in verdict.differences] == [
        ("DESCRIPTION_CHANGED", "#/properties/a")
    ]
    assert verdict.compatible


def test_plain_modes_compare_with_the_latest_version_only():
    # compatible with v2 (the latest), not with v1
    assert compatible(check(V3, [V1, V2], mode="BACKWARD"), {"DESCRIPTION_CHANGED"})
    # and the other way round: the latest decides
    verdict = check(V3, [V2, V1], mode="BACKWARD")
    assert breaking_kinds(verdict) == {"TYPE_CHANGED"}


def test_unknown_mode_or_policy_is_refused():
    with pytest.raises(ValueError, match="mode"):
        check(STR, [STR], mode="SIDEWAYS")
    with pytest.raises(ValueError, match="policy"):
        check(STR, [STR], policy="LAX")
    with pytest.raises(ValueError, match="policy"):
        is_allowed("TYPE_EXTENDED", "LAX")


def test_modes_and_policies_are_case_insensitive():
    old, new = LOWERED

    verdict = check(new, [old], mode="forward", policy="lenient")

    assert verdict.mode == "FORWARD" and verdict.policy == "LENIENT"
    assert verdict.compatible and kinds(verdict.differences) == {"MAX_LENGTH_INCREASED"}


def test_previous_must_be_a_list():
    with pytest.raises(TypeError):
        check(STR, STR)


# --------------------------------------------------------------------------- policies


@pytest.mark.parametrize(
    ("kind", "strict", "lenient"),
    [
        ("DESCRIPTION_CHANGED", True, True),
        ("TYPE_EXTENDED", True, True),
        ("TYPE_NARROWED", False, False),
        ("TYPE_CHANGED", False, False),
        ("MAX_LENGTH_INCREASED", True, True),
        ("MAX_LENGTH_ADDED", False, False),
        ("MIN_CONTAINS_DECREASED", True, True),
        ("MAX_CONTAINS_DECREASED", False, False),
        ("ENUM_ARRAY_EXTENDED", True, True),
        ("ENUM_ARRAY_NARROWED", False, False),
        ("REQUIRED_ATTRIBUTE_ADDED", False, False),
        ("REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED", True, True),
        ("ADDITIONAL_PROPERTIES_REMOVED", False, True),
        ("ADDITIONAL_PROPERTIES_NARROWED", False, True),
        ("UNEVALUATED_PROPERTIES_NARROWED", False, True),
        ("OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", False, True),
        ("REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL", False, True),
        ("REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", False, False),
        ("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", False, True),
        ("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", False, True),
        ("PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", False, True),
        ("ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", False, False),
        ("ADDITIONAL_ITEMS_REMOVED", False, False),
        ("SUM_TYPE_EXTENDED", True, True),
        ("SUM_TYPE_NARROWED", False, False),
        ("PRODUCT_TYPE_NARROWED", True, True),
        ("PRODUCT_TYPE_EXTENDED", False, False),
        ("NOT_TYPE_NARROWED", True, True),
        ("SOMETHING_ELSE", False, False),
    ],
)
def test_is_allowed(kind, strict, lenient):
    assert is_allowed(kind, "STRICT") is strict
    assert is_allowed(kind, "LENIENT") is lenient


def test_lenient_allows_everything_strict_allows():
    for kind in compatibility.KINDS:
        if is_allowed(kind, "STRICT"):
            assert is_allowed(kind, "LENIENT"), kind


# --------------------------------------------------------------------------- $ref


LINKED = {
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"value": INT, "next": {"$ref": "#/$defs/node"}},
            "required": ["value"],
        }
    },
    "$ref": "#/$defs/node",
}


def test_recursive_schema_against_itself_terminates_clean():
    started = time.process_time()

    assert diff(LINKED, copy.deepcopy(LINKED)) == []
    assert compatible(check(copy.deepcopy(LINKED), [LINKED], mode="FULL_TRANSITIVE"), set())
    assert time.process_time() - started < HANG_GUARD


def test_a_change_inside_a_recursive_schema_is_found_once():
    changed = copy.deepcopy(LINKED)
    changed["$defs"]["node"]["properties"]["value"] = {"type": "number"}

    backward = check(changed, [LINKED])
    forward = check(changed, [LINKED], mode="FORWARD")

    assert [(d.kind, d.path) for d in backward.differences] == [
        ("TYPE_EXTENDED", "#/properties/value")
    ]
    assert compatible(backward, {"TYPE_EXTENDED"})
    assert breaking_kinds(forward) == {"TYPE_NARROWED"}


def test_mutually_recursive_schemas_of_different_cycle_lengths_terminate():
    one = {
        "definitions": {"a": obj(n={"$ref": "#/definitions/a"}, v=STR)},
        "$ref": "#/definitions/a",
    }
    three = {
        "$defs": {
            "a": obj(n={"$ref": "#/$defs/b"}, v=STR),
            "b": obj(n={"$ref": "#/$defs/c"}, v=STR),
            "c": obj(n={"$ref": "#/$defs/a"}, v=string(maxLength=3)),
        },
        "$ref": "#/$defs/a",
    }
    started = time.process_time()

    backward = check(three, [one])
    forward = check(three, [one], mode="FORWARD")

    assert breaking_kinds(backward) == {"MAX_LENGTH_ADDED"}
    assert backward.breaking[0].path == "#/properties/n/properties/n/properties/v/maxLength"
    assert forward.compatible and kinds(forward.differences) == {"MAX_LENGTH_REMOVED"}
    assert time.process_time() - started < HANG_GUARD


def test_recursion_through_arrays_and_combinators_terminates():
    json_value = {
        "$defs": {
            "value": {
                "anyOf": [
                    {"type": ["string", "number", "boolean", "null"]},
                    {"type": "array", "items": {"$ref": "#/$defs/value"}},
                    {"type": "object", "additionalProperties": {"$ref": "#/$defs/value"}},
                ]
            }
        },
        "$ref": "#/$defs/value",
    }
    narrower = copy.deepcopy(json_value)
    narrower["$defs"]["value"]["anyOf"][0]["type"] = ["string", "number", "null"]
    started = time.process_time()

    assert compatible(check(copy.deepcopy(json_value), [json_value], mode="FULL"), set())
    verdict = check(narrower, [json_value])

    assert breaking_kinds(verdict) == {"COMBINED_TYPE_SUBSCHEMAS_CHANGED"}
    assert compatible(check(json_value, [narrower]), {"TYPE_EXTENDED"})
    assert time.process_time() - started < HANG_GUARD


def test_refs_are_resolved_in_each_schema_separately():
    old = {"$defs": {"name": string(maxLength=10)}, **obj(a={"$ref": "#/$defs/name"})}
    new = {"$defs": {"name": string(maxLength=5)}, **obj(a={"$ref": "#/$defs/name"})}

    assert [(d.kind, d.path) for d in diff(old, new)] == [
        ("MAX_LENGTH_DECREASED", "#/properties/a/maxLength")
    ]


def test_ref_siblings_apply_in_2020_12_and_annotations_count():
    # 2020-12 as $schema says: a schema without one is Draft 7, which ignores the siblings
    old = {
        "$schema": DRAFT2020,
        "$defs": {"n": STR},
        **obj(a={"$ref": "#/$defs/n", "maxLength": 5}),
    }
    new = {
        "$schema": DRAFT2020,
        "$defs": {"n": STR},
        **obj(["a"], a={"$ref": "#/$defs/n", "default": "x"}),
    }

    assert kinds(diff(old, new)) == {
        "MAX_LENGTH_REMOVED",
        "DEFAULT_CHANGED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
    }


def test_ref_siblings_are_ignored_in_draft_7():
    old = {"$schema": DRAFT7, "definitions": {"n": STR}, **obj(a={"$ref": "#/definitions/n"})}
    new = copy.deepcopy(old)
    new["properties"]["a"]["maxLength"] = 5  # Draft 7 ignores it beside $ref

    assert diff(old, new) == []


def test_refs_by_anchor_and_escaped_pointer():
    old = {
        "$defs": {"a/b": {"$anchor": "name", **string(maxLength=5)}},
        **obj(x={"$ref": "#/$defs/a~1b"}, y={"$ref": "#name"}),
    }
    new = copy.deepcopy(old)
    new["$defs"]["a/b"]["maxLength"] = 3

    assert {(d.kind, d.path) for d in diff(old, new)} == {
        ("MAX_LENGTH_DECREASED", "#/properties/x/maxLength"),
        ("MAX_LENGTH_DECREASED", "#/properties/y/maxLength"),
    }


# --------------------------------------------------------------------------- parse_schema


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ("not json", "not JSON"),
        ('{"a": 1', "not JSON"),
        (b"\xff\xfe", "not UTF-8"),
        ("[1, 2]", "not an array"),
        ("42", "not a number"),
        ('"schema"', "not a string"),
        ('{"maximum": NaN}', "NaN"),
        # no $schema: Draft 7, as the reference registry reads it
        ('{"type": "strin"}', "not a valid JSON Schema (Draft 7)"),
        (
            '{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "strin"}',
            "not a valid JSON Schema (Draft 2020-12)",
        ),
        ('{"minLength": -1}', "at #/minLength"),
        ('{"required": "a"}', "not a valid JSON Schema"),
        (
            '{"$schema": "http://json-schema.org/draft-07/schema#", "items": {"type": 3}}',
            "not a valid JSON Schema (Draft 7)",
        ),
        ('{"$schema": "http://json-schema.org/draft-03/schema#"}', "unsupported $schema"),
        (
            '{"$schema": "http://json-schema.org/draft-04/schema#", "minimum": 0,'
            ' "exclusiveMinimum": 1}',
            "not a valid JSON Schema (Draft 4)",
        ),
        ('{"$ref": "#/$defs/missing"}', "does not resolve"),
        ('{"$ref": "#nowhere"}', "anchor"),
        ('{"$ref": "#"}', "circular"),
        (
            '{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}},'
            ' "$ref": "#/$defs/a"}',
            "circular",
        ),
        (
            '{"$schema": "https://json-schema.org/draft/2020-12/schema",'
            ' "$defs": {"a": 1}, "$ref": "#/$defs/a"}',
            "not a valid JSON Schema",
        ),
        ('{"$defs": {"a": 1}, "$ref": "#/$defs/a"}', "does not point at a schema"),
    ],
)
def test_invalid_schemas_are_rejected_with_a_reason(document, reason):
    with pytest.raises(InvalidSchema) as caught:
        parse_schema(document)

    assert reason in caught.value.reason
    assert not isinstance(caught.value, SchemaTooComplex)


@pytest.mark.parametrize(
    "ref",
    [
        "https://example.com/schemas/address.json",
        "http://example.com/s.json#/$defs/a",
        "address.json",
        "other.json#/definitions/a",
        "urn:example:schema",
    ],
)
def test_remote_refs_are_rejected_and_never_fetched(ref, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the checker tried to fetch a $ref")

    monkeypatch.setattr("urllib.request.urlopen", no_network)
    schema = obj(address={"$ref": ref})

    with pytest.raises(InvalidSchema) as caught:
        parse_schema(json.dumps(schema))
    assert "not local" in caught.value.reason and ref in caught.value.reason

    # check() given unparsed schemas rejects them too
    with pytest.raises(InvalidSchema) as caught:
        check(schema, [obj(address=STR)])
    assert "not local" in caught.value.reason


def test_parse_schema_accepts_text_bytes_objects_and_both_drafts():
    text = '{"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {}}}'

    assert parse_schema(text) == json.loads(text)
    assert parse_schema(text.encode()) == json.loads(text)
    assert parse_schema(True) is True
    schema = {"$schema": DRAFT7, "definitions": {"a": STR}, "items": {"$ref": "#/definitions/a"}}
    assert parse_schema(schema) is schema
    # a "$ref" inside a value (default, enum, examples) is data, not a reference
    assert parse_schema({"default": {"$ref": "https://example.com/x"}, "type": "object"})


def test_check_and_diff_parse_text():
    verdict = check('{"type": "string"}', ['{"type": "string", "maxLength": 3}'])

    assert verdict.compatible and kinds(verdict.differences) == {"MAX_LENGTH_REMOVED"}
    with pytest.raises(InvalidSchema):
        diff("{", STR)


def test_canonical_and_fingerprint():
    a = {"b": 1, "a": {"d": "é", "c": [2, 1]}}
    b = json.loads('{"a": {"c": [2, 1], "d": "é"}, "b": 1}')

    assert canonical(a) == '{"a":{"c":[2,1],"d":"é"},"b":1}'
    assert fingerprint(a) == fingerprint(b)
    assert len(fingerprint(a)) == 64 and int(fingerprint(a), 16) >= 0
    assert fingerprint(a) != fingerprint({**a, "b": 2})


def test_verdict_and_difference_as_dict_are_json():
    verdict = check(string(maxLength=3), [string(maxLength=5)])

    answer = verdict.as_dict()

    assert json.loads(json.dumps(answer)) == answer
    assert answer["compatible"] is False
    assert answer["mode"] == "BACKWARD" and answer["policy"] == "STRICT"
    assert answer["breaking"] == [
        {
            "kind": "MAX_LENGTH_DECREASED",
            "path": "#/maxLength",
            "message": "maxLength is 3 in the new schema, below 5 in the old schema.",
        }
    ]
    assert answer["differences"] == answer["breaking"]
    assert isinstance(verdict, Verdict) and isinstance(verdict.breaking[0], Difference)


# --------------------------------------------------------------------------- pathological


def nested(depth):
    schema = STR
    for _ in range(depth):
        schema = obj(a=schema)
    return schema


def branches(count, offset=0):
    return {
        "oneOf": [
            {"type": "object", "properties": {"k": {"const": i + offset}}, "required": ["k"]}
            for i in range(count)
        ]
    }


def timed(function):
    started = time.process_time()
    try:
        return function(), time.process_time() - started
    except SchemaTooComplex as exc:
        return exc, time.process_time() - started


@pytest.mark.parametrize(
    "scenario",
    [
        pytest.param(lambda: diff(nested(200), nested(200)), id="deep schemas in diff"),
        pytest.param(lambda: parse_schema(nested(200)), id="deep schema in parse"),
        pytest.param(lambda: parse_schema(nested(70)), id="schema depth in parse"),
        pytest.param(lambda: parse_schema("[" * 100_000 + "]" * 100_000), id="deep JSON text"),
        pytest.param(
            lambda: parse_schema('{"not":' * 50_000 + "{}" + "}" * 50_000), id="deep not chain"
        ),
        pytest.param(lambda: diff(branches(300), branches(300)), id="oneOf 300 x 300"),
        pytest.param(
            lambda: diff(
                {"type": "object", "properties": {f"p{i}": nested(3) for i in range(9_000)}},
                {"type": "object", "properties": {f"p{i}": nested(3) for i in range(9_000)}},
            ),
            id="work budget",
        ),
    ],
)
def test_pathological_schemas_are_refused(scenario):
    answer, elapsed = timed(scenario)

    assert isinstance(answer, SchemaTooComplex), answer
    assert isinstance(answer, InvalidSchema) and answer.reason
    assert elapsed < HANG_GUARD


def test_work_hidden_in_keywords_is_bounded_too():
    def enums(offset):
        values = [list(range(i * 300 + offset, (i + 1) * 300)) for i in range(64)]
        return {"oneOf": [{"enum": branch} for branch in values]}

    def properties(offset):
        return {
            "oneOf": [obj(**{f"p{offset}_{i}_{j}": STR for j in range(300)}) for i in range(64)]
        }

    def required(offset):
        names = [[f"r{offset}_{i}_{j}" for j in range(300)] for i in range(64)]
        return {"oneOf": [{"required": branch} for branch in names]}

    answer, elapsed = timed(lambda: check(enums(1), [enums(0)]))
    assert elapsed < HANG_GUARD
    assert breaking_kinds(answer) == {"COMBINED_TYPE_SUBSCHEMAS_CHANGED"}
    for scenario in (properties, required):
        answer, elapsed = timed(lambda scenario=scenario: check(scenario(1), [scenario(0)]))
        assert isinstance(answer, SchemaTooComplex), answer
        assert elapsed < HANG_GUARD


def test_parse_schema_bounds_its_own_work():
    chain = {f"a{i}": {"$ref": f"#/$defs/a{i + 1}"} for i in range(31)}
    chain["a31"] = STR
    many_refs = {"$defs": chain, **obj(**{f"p{i}": {"$ref": "#/$defs/a0"} for i in range(2000)})}
    too_big = obj(**{f"p{i}": string(maxLength=5, pattern="^a") for i in range(2000)})

    parsed, elapsed = timed(lambda: parse_schema(many_refs))
    assert parsed is many_refs and elapsed < HANG_GUARD
    refused, elapsed = timed(lambda: parse_schema(too_big))
    assert isinstance(refused, SchemaTooComplex) and "keywords" in refused.reason
    assert elapsed < HANG_GUARD


def test_many_branches_on_both_sides_are_answered_in_bounded_time():
    same, elapsed_same = timed(lambda: check(branches(60), [branches(60)], mode="FULL"))
    disjoint, elapsed_disjoint = timed(lambda: check(branches(60, 1000), [branches(60)]))
    grown, elapsed_grown = timed(lambda: check(branches(61), [branches(60)]))

    assert same.compatible and same.differences == ()
    assert breaking_kinds(disjoint) == {"COMBINED_TYPE_SUBSCHEMAS_CHANGED"}
    assert grown.compatible and kinds(grown.differences) == {"SUM_TYPE_EXTENDED"}
    assert max(elapsed_same, elapsed_disjoint, elapsed_grown) < HANG_GUARD


def test_nested_combinators_are_bounded():
    def nest(offset):
        inner = {"anyOf": [{"const": j + offset} for j in range(60)]}
        return {"anyOf": [obj(**{f"x{i}": inner}) for i in range(60)]}

    answer, elapsed = timed(lambda: check(nest(1), [nest(0)]))

    assert elapsed < HANG_GUARD
    if not isinstance(answer, SchemaTooComplex):
        assert breaking_kinds(answer) == {"COMBINED_TYPE_SUBSCHEMAS_CHANGED"}


def test_a_shared_definition_is_reported_where_it_is_used():
    old = {"$defs": {"zip": string(maxLength=5)}, **obj(home={"$ref": "#/$defs/zip"})}
    old["properties"]["work"] = obj(zip={"$ref": "#/$defs/zip"})
    new = copy.deepcopy(old)
    new["$defs"]["zip"]["maxLength"] = 4

    verdict = check(new, [old])

    assert [(d.kind, d.path) for d in verdict.breaking] == [
        ("MAX_LENGTH_DECREASED", "#/properties/home/maxLength"),
        ("MAX_LENGTH_DECREASED", "#/properties/work/properties/zip/maxLength"),
    ]


def test_shared_definitions_are_compared_once():
    # each level refers twice to the next: 2**40 paths, 41 pairs of sub-schemas
    defs = {
        f"d{i}": obj(left={"$ref": f"#/$defs/d{i + 1}"}, right={"$ref": f"#/$defs/d{i + 1}"})
        for i in range(40)
    }
    defs["d40"] = string(maxLength=3)
    old = {"$defs": defs, "$ref": "#/$defs/d0"}
    new = copy.deepcopy(old)
    new["$defs"]["d40"]["maxLength"] = 2

    verdict, elapsed = timed(lambda: check(new, [old], mode="FULL_TRANSITIVE"))

    assert breaking_kinds(verdict) == {"MAX_LENGTH_DECREASED"}
    # repeated at further places up to a cap, not at all 2**40
    assert 1 < len(verdict.breaking) <= compatibility.MAX_REPEATS + 1
    assert elapsed < HANG_GUARD


def test_catastrophic_pattern_properties_regex_is_not_run():
    old = {
        "type": "object",
        "patternProperties": {"^(a+)+$": STR},
        "additionalProperties": False,
    }
    new = {**old, "properties": {"a" * 40 + "!": INT}}

    verdict, elapsed = timed(lambda: check(new, [old]))

    assert elapsed < HANG_GUARD
    assert breaking_kinds(verdict) == {"PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"}
    assert compatible(
        check(new, [old], policy="LENIENT"),
        {
            "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
            "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        },
    )


def test_a_fifty_property_check_is_fast():
    properties = {f"p{i}": string(maxLength=i + 1, description=f"p{i}") for i in range(50)}
    old = closed(["p1", "p2"], **properties)
    new = copy.deepcopy(old)
    new["properties"]["p3"]["maxLength"] = 100
    new["properties"]["extra"] = STR
    rounds = 200

    started = time.process_time()
    for _ in range(rounds):
        verdict = check(new, [old])
    average = (time.process_time() - started) / rounds

    assert verdict.compatible
    assert kinds(verdict.differences) == {
        "MAX_LENGTH_INCREASED",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    }
    assert average < 0.005  # ~0.1 ms on a laptop; generous for loaded CI machines


# --------------------------------------------------------------------------- fast meta-check


def _mutations(rng, node, depth=0):
    """A schema with one of its keywords given a value of a wrong or odd shape."""
    broken = copy.deepcopy(node)
    target = broken
    for _ in range(depth):
        props = target.get("properties") if isinstance(target, dict) else None
        if not props:
            break
        target = props[rng.choice(sorted(props))]
    if not isinstance(target, dict):
        return broken
    key = rng.choice(
        [
            "type",
            "required",
            "minLength",
            "maximum",
            "pattern",
            "enum",
            "items",
            "properties",
            "oneOf",
            "multipleOf",
            "uniqueItems",
            "description",
            "$ref",
            "patternProperties",
            "exclusiveMinimum",
            "format",
            "examples",
            "dependentRequired",
            "additionalProperties",
        ]
    )
    target[key] = rng.choice(
        [
            -1,
            1.5,
            0,
            "x",
            "string",
            "(",
            ["a", "a"],
            [],
            {},
            {"a": 1},
            True,
            None,
            [1],
            "#/$defs/a b",
        ]
    )
    return broken


@pytest.mark.parametrize(
    "draft",
    ["https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#"],
)
def test_the_fast_meta_check_never_accepts_what_the_meta_schema_refuses(draft):
    validator = Draft7Validator if "draft-07" in draft else Draft202012Validator
    rng = random.Random(11)
    base = {
        "$schema": draft,
        "type": "object",
        "properties": {
            "id": {"type": "string", "minLength": 1, "pattern": "^[a-z]+$"},
            "n": {"type": ["integer", "null"], "minimum": 0, "multipleOf": 2},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "uniqueItems": True},
            "nested": {"type": "object", "properties": {"x": {"oneOf": [{"type": "string"}]}}},
        },
        "required": ["id"],
    }
    accepted = 0
    for _ in range(400):
        schema = _mutations(rng, base, depth=rng.randint(0, 2))
        if plainly_valid(schema, "draft-07" in draft):
            accepted += 1
            try:
                validator.check_schema(schema, format_checker=validator.FORMAT_CHECKER)
            except SchemaError as exc:  # pragma: no cover - the failure this test exists for
                pytest.fail(f"fast check accepted an invalid schema: {schema} ({exc.message})")
    # It decides on its own for plain schemas (the point of it), mutated or not.
    assert plainly_valid(base, "draft-07" in draft) and accepted > 20


# --------------------------------------------------------------------------- drafts


@pytest.mark.parametrize(
    "uri",
    [
        "http://json-schema.org/draft-04/schema#",
        "http://json-schema.org/draft-06/schema#",
        "http://json-schema.org/draft-07/schema#",
        "https://json-schema.org/draft/2019-09/schema",
        "https://json-schema.org/draft/2020-12/schema",
        "https://json-schema.org/draft-07/schema",
    ],
)
def test_each_draft_the_reference_registry_reads_is_accepted(uri):
    schema = {"$schema": uri, "type": "object", "properties": {"a": {"type": "string"}}}
    assert parse_schema(json.dumps(schema)) == schema


def test_a_schema_without_schema_is_draft_7_so_tuple_items_are_valid():
    old = {"type": "array", "items": [{"type": "string"}], "additionalItems": False}
    assert parse_schema(json.dumps(old)) == old
    new = {**old, "items": [{"type": "string"}, {"type": "integer"}]}
    # an item added to a closed tuple: compatible under STRICT, as for prefixItems
    assert check(new, [old]).compatible


def test_draft_4_bounds_are_read_as_draft_4():
    schema = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "number",
        "minimum": 0,
        "exclusiveMinimum": True,
    }
    assert parse_schema(schema) == schema


def test_ref_siblings_are_ignored_without_schema_as_in_draft_7():
    old = {"definitions": {"n": STR}, **obj(a={"$ref": "#/definitions/n"})}
    new = copy.deepcopy(old)
    new["properties"]["a"]["maxLength"] = 5
    assert diff(old, new) == []
