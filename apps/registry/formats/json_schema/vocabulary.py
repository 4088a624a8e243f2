"""The JSON Schema keywords the checker knows, its limits, and the small helpers its
rules share."""

from __future__ import annotations

import json

from apps.registry.formats.json_schema.kinds import _BOUND_KEYWORDS

MAX_DEPTH = 64  # nested sub-schemas, in a parsed schema and in a walk
MAX_WORK = 20_000  # work units of one diff: a sub-schema pair, a reported difference, ...
MAX_BRANCH_PAIRS = 4_096  # pairings tried between the branches of two combinators
MAX_JSON_DEPTH = 256  # nested JSON containers in a document given to parse_schema
MAX_JSON_NODES = 50_000  # JSON values in such a document
MAX_JSON_MEMBERS = 6_000  # object members in it: meta-validation costs up to ~90 µs each
MAX_REF_HOPS = 32  # a $ref to a $ref to ...
MAX_REPEATS = 500  # differences repeated at a further place a shared sub-schema is used

_MISSING = object()
_UNSURE = object()  # a patternProperties regex too risky to run
_EMPTY: dict = {}  # the schema `true`; shared, never mutated
_NO_NAMES: frozenset = frozenset()
_NOTHING = ("", ())
_INF = float("inf")

_VALIDATING = frozenset(
    {
        "$ref",
        "$dynamicRef",
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "items",
        "prefixItems",
        "additionalItems",
        "unevaluatedItems",
        "contains",
        "maxContains",
        "minContains",
        "maxItems",
        "minItems",
        "uniqueItems",
        "properties",
        "patternProperties",
        "additionalProperties",
        "unevaluatedProperties",
        "required",
        "dependencies",
        "dependentRequired",
        "dependentSchemas",
        "propertyNames",
        "maxProperties",
        "minProperties",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
    }
)
_COMBINATORS = ("allOf", "anyOf", "oneOf")
_COMBINATOR_SET = frozenset(_COMBINATORS)
_VALIDATING_BESIDES_COMBINATORS = _VALIDATING - _COMBINATOR_SET
_REF_KEYS = ("$ref", "$dynamicRef")
# siblings of a $ref that are not folded into the referenced schema
_NOT_MERGED = frozenset(
    {"$ref", "$dynamicRef", "$defs", "definitions", "$schema", "$comment", "$anchor"}
    | {"$dynamicAnchor", "$vocabulary"}
)
_ANNOTATIONS = (
    ("$id", "ID_CHANGED"),
    ("title", "TITLE_CHANGED"),
    ("description", "DESCRIPTION_CHANGED"),
    ("default", "DEFAULT_CHANGED"),
)

_BOUND, _OBJECT, _ARRAY, _ENUM, _PATTERN, _MULTIPLE, _COMBINED, _NOT, _CONDITIONAL = (
    1 << i for i in range(9)
)
_GROUP = dict.fromkeys(_BOUND_KEYWORDS, _BOUND)
_GROUP.update(
    dict.fromkeys(
        (
            "properties",
            "required",
            "additionalProperties",
            "patternProperties",
            "unevaluatedProperties",
            "dependencies",
            "dependentRequired",
            "dependentSchemas",
            "propertyNames",
        ),
        _OBJECT,
    )
)
_GROUP.update(
    dict.fromkeys(
        ("items", "prefixItems", "additionalItems", "unevaluatedItems", "contains", "uniqueItems"),
        _ARRAY,
    )
)
_GROUP.update({"enum": _ENUM, "const": _ENUM, "pattern": _PATTERN, "multipleOf": _MULTIPLE})
_GROUP.update(dict.fromkeys(_COMBINATORS, _COMBINED))
_GROUP.update({"not": _NOT, "if": _CONDITIONAL, "then": _CONDITIONAL, "else": _CONDITIONAL})

_OPEN, _CLOSED, _PARTIAL = "open", "closed", "partially open"

# sub-schema positions, for walking a whole schema (reference checks, anchors)
_ONE_SCHEMA = (
    "additionalProperties",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
    "items",
)
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SCHEMA_MAPS = (
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
)


# --------------------------------------------------------------------------- helpers


def _presence_kind(a, b, added: str, removed: str) -> str | None:
    """`added` when only the update has a value (the original's is None), `removed` when
    only the original has one; None when both have one, for the caller to compare."""
    if a is None:
        return added
    if b is None:
        return removed
    return None


def _property_added_kind(required: bool, default: bool, content_model: str) -> str:
    """How a property added to an OPEN or UNOPEN content model is reported."""
    if required and default:
        return f"REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_{content_model}_CONTENT_MODEL"
    if required:
        return f"REQUIRED_PROPERTY_ADDED_TO_{content_model}_CONTENT_MODEL"
    return f"OPTIONAL_PROPERTY_ADDED_TO_{content_model}_CONTENT_MODEL"


def _only_combinator(node):
    """The combinator keyword when it is the node's only validating keyword."""
    if _COMBINATOR_SET.isdisjoint(node) or not _VALIDATING_BESIDES_COMBINATORS.isdisjoint(node):
        return None
    found = None
    for crit in _COMBINATORS:
        if crit in node:
            if found is not None:
                return None
            found = crit
    return found


def _type_set(value):
    if value is None:
        return None
    if type(value) is str:
        return frozenset((value,))
    return frozenset(value)


def _covered(name, names):
    return name in names or (name == "integer" and "number" in names)


def _extra_of(node):
    extra = node.get("additionalProperties", _MISSING)
    if extra is _MISSING:
        extra = node.get("unevaluatedProperties", True)
    return extra


def _items_of(node):
    """(tuple subschemas, their keyword, schema of the other items, its keyword)."""
    prefix = node.get("prefixItems")
    items = node.get("items", _MISSING)
    if prefix is not None:
        return prefix, "prefixItems", True if items is _MISSING else items, "items"
    if type(items) is list:
        return items, "items", node.get("additionalItems", True), "additionalItems"
    return None, None, True if items is _MISSING else items, "items"


def _dependencies_of(node):
    arrays: dict = {}
    schemas: dict = {}
    legacy = node.get("dependencies")
    if legacy:
        for key, value in legacy.items():
            (arrays if type(value) is list else schemas)[key] = ("dependencies", value)
    for key, value in (node.get("dependentRequired") or _EMPTY).items():
        arrays[key] = ("dependentRequired", value)
    for key, value in (node.get("dependentSchemas") or _EMPTY).items():
        schemas[key] = ("dependentSchemas", value)
    return arrays, schemas


def _value_key(value):
    kind = type(value)
    if kind is str or value is None:
        return value
    if kind is bool:
        return ("bool", value)
    if kind is int or kind is float:
        return value  # 1 and 1.0 are the same JSON Schema number
    return ("json", json.dumps(value, sort_keys=True, separators=(",", ":")))


def _values(node):
    """The values enum/const allow (None: unrestricted) and the keyword that says so."""
    enum = node.get("enum", _MISSING)
    const = node.get("const", _MISSING)
    if enum is _MISSING and const is _MISSING:
        return None, None
    if const is _MISSING:
        return frozenset(_value_key(v) for v in enum), "enum"
    values = frozenset((_value_key(const),))
    if enum is _MISSING:
        return values, "const"
    return values & frozenset(_value_key(v) for v in enum), "enum"


def _count(values):
    return "1 value" if len(values) == 1 else f"{len(values)} values"


def _escape(name) -> str:
    if type(name) is not str:
        name = str(name)
    if "~" in name or "/" in name:
        return name.replace("~", "~0").replace("/", "~1")
    return name


def _show(value) -> str:
    if value is _MISSING or value is None:
        return "none"
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _show_types(value) -> str:
    if value is None:
        return "any type"
    if type(value) is str:
        return value
    return "[" + ", ".join(str(v) for v in value) + "]"


def _show_shape(node) -> str:
    only = _only_combinator(node)
    if only is not None:
        return only
    return _show_types(node.get("type"))
