"""JSON Schema compatibility, judged the way Confluent Schema Registry's SchemaDiff judges it.

The contract is the shared `registry-compatibility.md`; this module is its executable form.
`diff(original, update)` walks two schemas together and reports every difference with a
JSON path and an UPPER_SNAKE kind named after SchemaDiff's `Difference.Type`; `check()`
applies a compatibility mode to a new schema and the published history, and a policy
(STRICT or LENIENT) decides which kinds are allowed.

In `diff(original, update)` data written with `original` is read with `update`: BACKWARD
compares (old, new), FORWARD (new, old), FULL both.

The walker works on the parsed JSON itself, with no intermediate schema model, so that a
check of an ordinary schema costs well under a millisecond. It resolves local `$ref`s as it
goes and never fetches anything; it memoises every pair of sub-schemas it has compared, so
recursive schemas terminate and shared definitions are compared once; and it spends from a
bounded budget: too deep a nesting, too many sub-schema pairs or too many anyOf/oneOf/allOf
pairings raise SchemaTooComplex instead of running away.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from fractions import Fraction
from urllib.parse import quote, unquote, urljoin

from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
)
from jsonschema.exceptions import SchemaError

__all__ = [
    "KINDS",
    "MODES",
    "POLICIES",
    "Difference",
    "InvalidSchema",
    "SchemaTooComplex",
    "Verdict",
    "canonical",
    "check",
    "diff",
    "fingerprint",
    "is_allowed",
    "parse_schema",
]

MODES = (
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
    "NONE",
)
POLICIES = ("STRICT", "LENIENT")

MAX_DEPTH = 64  # nested sub-schemas, in a parsed schema and in a walk
MAX_WORK = 20_000  # work units of one diff: a sub-schema pair, a reported difference, ...
MAX_BRANCH_PAIRS = 4_096  # pairings tried between the branches of two combinators
MAX_JSON_DEPTH = 256  # nested JSON containers in a document given to parse_schema
MAX_JSON_NODES = 50_000  # JSON values in such a document
MAX_JSON_MEMBERS = 6_000  # object members in it: meta-validation costs up to ~90 µs each
MAX_REF_HOPS = 32  # a $ref to a $ref to ...
MAX_REPEATS = 500  # differences repeated at a further place a shared sub-schema is used


class InvalidSchema(Exception):
    """The input is not JSON, not a JSON Schema this registry accepts, or refers elsewhere."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class SchemaTooComplex(InvalidSchema):
    """Checking the schema would exceed the nesting depth or the work budget."""


# --------------------------------------------------------------------------- kinds

# keyword: (kind prefix, whether a larger value accepts more)
_BOUND_KEYWORDS = {
    "maxLength": ("MAX_LENGTH", True),
    "minLength": ("MIN_LENGTH", False),
    "maximum": ("MAXIMUM", True),
    "minimum": ("MINIMUM", False),
    "exclusiveMaximum": ("EXCLUSIVE_MAXIMUM", True),
    "exclusiveMinimum": ("EXCLUSIVE_MINIMUM", False),
    "maxProperties": ("MAX_PROPERTIES", True),
    "minProperties": ("MIN_PROPERTIES", False),
    "maxItems": ("MAX_ITEMS", True),
    "minItems": ("MIN_ITEMS", False),
    "maxContains": ("MAX_CONTAINS", True),
    "minContains": ("MIN_CONTAINS", False),
}
# keyword: (added, removed, increased, decreased)
_BOUND_KINDS = {
    keyword: tuple(
        f"{prefix}_{change}" for change in ("ADDED", "REMOVED", "INCREASED", "DECREASED")
    )
    for keyword, (prefix, _) in _BOUND_KEYWORDS.items()
}
# a bound relaxed: a maximum raised, a minimum lowered, either removed
_BOUNDS_RELAXED = {kinds[1] for kinds in _BOUND_KINDS.values()} | {
    kinds[2] if _BOUND_KEYWORDS[keyword][1] else kinds[3] for keyword, kinds in _BOUND_KINDS.items()
}

_STRICT_ALLOWED = frozenset(
    _BOUNDS_RELAXED
    | {
        "ID_CHANGED",
        "DESCRIPTION_CHANGED",
        "TITLE_CHANGED",
        "DEFAULT_CHANGED",
        "SCHEMA_REMOVED",
        "TYPE_EXTENDED",
        "PATTERN_REMOVED",
        "MULTIPLE_OF_REDUCED",
        "MULTIPLE_OF_REMOVED",
        "REQUIRED_ATTRIBUTE_REMOVED",
        "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
        "DEPENDENCY_ARRAY_NARROWED",
        "DEPENDENCY_ARRAY_REMOVED",
        "DEPENDENCY_SCHEMA_REMOVED",
        "ADDITIONAL_PROPERTIES_ADDED",
        "ADDITIONAL_PROPERTIES_EXTENDED",
        "UNEVALUATED_PROPERTIES_ADDED",
        "UNEVALUATED_PROPERTIES_EXTENDED",
        "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
        "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "UNIQUE_ITEMS_REMOVED",
        "ADDITIONAL_ITEMS_ADDED",
        "ADDITIONAL_ITEMS_EXTENDED",
        "UNEVALUATED_ITEMS_ADDED",
        "UNEVALUATED_ITEMS_EXTENDED",
        "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
        "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
        "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
        "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
        "ENUM_ARRAY_EXTENDED",
        "COMBINED_TYPE_EXTENDED",
        "PRODUCT_TYPE_NARROWED",
        "SUM_TYPE_EXTENDED",
        "NOT_TYPE_NARROWED",
    }
)
_LENIENT_ALLOWED = _STRICT_ALLOWED | {
    "ADDITIONAL_PROPERTIES_NARROWED",
    "ADDITIONAL_PROPERTIES_REMOVED",
    "UNEVALUATED_PROPERTIES_NARROWED",
    "UNEVALUATED_PROPERTIES_REMOVED",
    "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    # the name SchemaDiff used before 8.x for an optional property added to an open model;
    # never emitted here, still understood by is_allowed()
    "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
}
_ALLOWED = {"STRICT": _STRICT_ALLOWED, "LENIENT": frozenset(_LENIENT_ALLOWED)}

# {o} and {u} name the two schemas ("old"/"new" in either order), {a} and {b} their values;
# the sentences hold in both directions, as FORWARD reads the new schema's data with the old.
_TEMPLATES = {
    "ID_CHANGED": "$id is {a} in the {o} schema and {b} in the {u} schema.",
    "TITLE_CHANGED": "The title is {a} in the {o} schema and {b} in the {u} schema.",
    "DESCRIPTION_CHANGED": "The description differs between the {o} and the {u} schema.",
    "DEFAULT_CHANGED": "The default is {a} in the {o} schema and {b} in the {u} schema.",
    "SCHEMA_ADDED": "The {u} schema constrains a value that the {o} schema leaves unconstrained.",
    "SCHEMA_REMOVED": "The {u} schema accepts any value where the {o} schema has constraints.",
    "TYPE_EXTENDED": "The {u} schema accepts {b}, more than {a} in the {o} schema.",
    "TYPE_NARROWED": "The {u} schema accepts only {b}, less than {a} in the {o} schema.",
    "TYPE_CHANGED": "The type is {a} in the {o} schema but {b} in the {u} schema.",
    "PATTERN_ADDED": "The {u} schema requires the pattern {b}; the {o} schema has none.",
    "PATTERN_REMOVED": "The {o} schema requires the pattern {a}; the {u} schema has none.",
    "PATTERN_CHANGED": "The pattern is {a} in the {o} schema but {b} in the {u} schema.",
    "MULTIPLE_OF_ADDED": "The {u} schema requires multipleOf {b}; the {o} schema has none.",
    "MULTIPLE_OF_REMOVED": "The {o} schema requires multipleOf {a}; the {u} schema has none.",
    "MULTIPLE_OF_EXPANDED": (
        "multipleOf is {b} in the {u} schema, a multiple of {a} in the {o} schema."
    ),
    "MULTIPLE_OF_REDUCED": (
        "multipleOf is {b} in the {u} schema, a divisor of {a} in the {o} schema."
    ),
    "MULTIPLE_OF_CHANGED": (
        "multipleOf is {a} in the {o} schema and {b} in the {u} schema; neither divides the other."
    ),
    "REQUIRED_ATTRIBUTE_ADDED": (
        "Property {a} is required by the {u} schema, without a default, but not by the {o} schema."
    ),
    "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED": (
        "Property {a} is required by the {u} schema, which gives it a default, but not by"
        " the {o} schema."
    ),
    "REQUIRED_ATTRIBUTE_REMOVED": (
        "Property {a} is required by the {o} schema but not by the {u} schema."
    ),
    "DEPENDENCY_ARRAY_ADDED": (
        "The {u} schema has a dependency array for property {a}; the {o} schema has none."
    ),
    "DEPENDENCY_ARRAY_REMOVED": (
        "The {o} schema has a dependency array for property {a}; the {u} schema has none."
    ),
    "DEPENDENCY_ARRAY_EXTENDED": (
        "The dependency array of property {a} names more properties in the {u} schema than"
        " in the {o} schema."
    ),
    "DEPENDENCY_ARRAY_NARROWED": (
        "The dependency array of property {a} names fewer properties in the {u} schema than"
        " in the {o} schema."
    ),
    "DEPENDENCY_ARRAY_CHANGED": (
        "The dependency array of property {a} differs between the {o} and the {u} schema."
    ),
    "DEPENDENCY_SCHEMA_ADDED": (
        "The {u} schema has a dependency schema for property {a}; the {o} schema has none."
    ),
    "DEPENDENCY_SCHEMA_REMOVED": (
        "The {o} schema has a dependency schema for property {a}; the {u} schema has none."
    ),
    "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Required property {a} of the {u} schema, without a default, is absent from the {o}"
        " schema, whose open content model lets data lack it or hold anything under that name."
    ),
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Required property {a} of the {u} schema, with a default, is absent from the {o}"
        " schema, whose open content model lets data hold anything under that name."
    ),
    "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Optional property {a} of the {u} schema is absent from the {o} schema, whose open"
        " content model lets data hold anything under that name."
    ),
    "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Property {a} of the {u} schema accepts any value and is absent from the {o} schema,"
        " whose content model is open."
    ),
    "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL": (
        "Required property {a} of the {u} schema, without a default, is absent from the"
        " closed or partially open {o} schema, whose data may lack it."
    ),
    "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL": (
        "Required property {a} of the {u} schema, with a default, is absent from the closed"
        " or partially open {o} schema."
    ),
    "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL": (
        "Optional property {a} of the {u} schema is absent from the closed or partially open"
        " {o} schema."
    ),
    "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL": (
        "Property {a} of the {o} schema is absent from the {u} schema, whose open content"
        " model accepts it."
    ),
    "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL": (
        "Property {a}, which the {o} schema forbids, is absent from the closed {u} schema."
    ),
    "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL": (
        "Property {a} of the {o} schema is absent from the {u} schema, whose closed content"
        " model rejects it."
    ),
    "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Property {a} of the {u} schema is absent from the {o} schema and accepts all that"
        " the partially open content model of the {o} schema accepts under that name."
    ),
    "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Property {a} of the {u} schema is absent from the {o} schema and rejects values"
        " that the partially open content model of the {o} schema accepts under that name."
    ),
    "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Property {a} of the {o} schema is absent from the {u} schema, whose partially open"
        " content model accepts its values."
    ),
    "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Property {a} of the {o} schema is absent from the {u} schema, whose partially open"
        " content model rejects some of its values."
    ),
    "UNIQUE_ITEMS_ADDED": "The {u} schema requires unique items; the {o} schema does not.",
    "UNIQUE_ITEMS_REMOVED": "The {o} schema requires unique items; the {u} schema does not.",
    "ITEM_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {u} schema is absent from the {o} schema, whose open content"
        " model lets data hold anything there."
    ),
    "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {u} schema accepts any value and is absent from the {o}"
        " schema, whose content model is open."
    ),
    "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL": (
        "Tuple item {a} of the {u} schema is absent from the {o} schema, whose content model"
        " is closed."
    ),
    "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {o} schema is absent from the {u} schema, whose open content"
        " model accepts it."
    ),
    "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL": (
        "Tuple item {a}, which the {o} schema forbids, is absent from the closed {u} schema."
    ),
    "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL": (
        "Tuple item {a} of the {o} schema is absent from the {u} schema, whose closed content"
        " model rejects it."
    ),
    "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {u} schema accepts all that the {o} schema accepts there."
    ),
    "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {u} schema rejects values that the {o} schema accepts there."
    ),
    "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {o} schema is absent from the {u} schema, which still accepts"
        " its values there."
    ),
    "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL": (
        "Tuple item {a} of the {o} schema is absent from the {u} schema, which rejects some"
        " of its values there."
    ),
    "ENUM_ARRAY_EXTENDED": "The {u} schema allows more values than the {o} schema ({b}).",
    "ENUM_ARRAY_NARROWED": "The {u} schema allows fewer values than the {o} schema ({a}).",
    "ENUM_ARRAY_CHANGED": (
        "The {u} schema allows other values than the {o} schema ({a} of them missing, {b} new)."
    ),
    "COMBINED_TYPE_EXTENDED": ("The {o} schema's {a} is a more permissive {b} in the {u} schema."),
    "COMBINED_TYPE_CHANGED": "The {o} schema's {a} is {b} in the {u} schema.",
    "PRODUCT_TYPE_EXTENDED": "The {u} schema has more allOf members than the {o} schema.",
    "PRODUCT_TYPE_NARROWED": "The {u} schema has fewer allOf members than the {o} schema.",
    "SUM_TYPE_EXTENDED": "The {u} schema offers more alternatives than the {o} schema.",
    "SUM_TYPE_NARROWED": "The {u} schema offers fewer alternatives than the {o} schema.",
    "COMBINED_TYPE_SUBSCHEMAS_CHANGED": (
        "Not every subschema of the {o} schema's {a} has a compatible counterpart in the"
        " {u} schema's {b}."
    ),
    "NOT_TYPE_EXTENDED": "The {u} schema's not excludes values that the {o} schema's allows.",
    "NOT_TYPE_NARROWED": "The {u} schema's not excludes less than the {o} schema's.",
}
for _family, _keyword in (
    ("ADDITIONAL_PROPERTIES", "additionalProperties"),
    ("UNEVALUATED_PROPERTIES", "unevaluatedProperties"),
    ("ADDITIONAL_ITEMS", "additionalItems"),
    ("UNEVALUATED_ITEMS", "unevaluatedItems"),
):
    _TEMPLATES[f"{_family}_ADDED"] = (
        f"{_keyword} forbids in the {{o}} schema what the {{u}} schema allows."
    )
    _TEMPLATES[f"{_family}_REMOVED"] = (
        f"{_keyword} allows in the {{o}} schema what the {{u}} schema forbids."
    )
    _TEMPLATES[f"{_family}_EXTENDED"] = (
        f"The {{u}} schema accepts more under {_keyword} than the {{o}} schema."
    )
    _TEMPLATES[f"{_family}_NARROWED"] = (
        f"The {{u}} schema accepts less under {_keyword} than the {{o}} schema."
    )
for _keyword, (_added, _removed, _increased, _decreased) in _BOUND_KINDS.items():
    _TEMPLATES[_added] = f"The {{u}} schema has {_keyword} {{b}}; the {{o}} schema has none."
    _TEMPLATES[_removed] = f"The {{o}} schema has {_keyword} {{a}}; the {{u}} schema has none."
    _TEMPLATES[_increased] = (
        f"{_keyword} is {{b}} in the {{u}} schema, above {{a}} in the {{o}} schema."
    )
    _TEMPLATES[_decreased] = (
        f"{_keyword} is {{b}} in the {{u}} schema, below {{a}} in the {{o}} schema."
    )

KINDS = tuple(sorted(_TEMPLATES))  # every kind diff() may report
assert _LENIENT_ALLOWED - {"PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"} <= set(KINDS)


# --------------------------------------------------------------------------- results


@dataclass(frozen=True, slots=True)
class Difference:
    kind: str  # UPPER_SNAKE, one of KINDS
    path: str  # JSON pointer style: "#/properties/address/properties/zip"
    message: str  # one human sentence

    def as_dict(self) -> dict:
        return {"kind": self.kind, "path": self.path, "message": self.message}


@dataclass(frozen=True, slots=True)
class Verdict:
    compatible: bool
    mode: str
    policy: str
    differences: tuple[Difference, ...] = ()  # over all compared versions, deduplicated
    breaking: tuple[Difference, ...] = ()  # the differences the policy does not allow

    def as_dict(self) -> dict:
        return {
            "compatible": self.compatible,
            "mode": self.mode,
            "policy": self.policy,
            "differences": [d.as_dict() for d in self.differences],
            "breaking": [d.as_dict() for d in self.breaking],
        }


# --------------------------------------------------------------------------- public API


def canonical(schema) -> str:
    """The schema as compact JSON with sorted keys: equal schemas, equal text."""
    if isinstance(schema, str | bytes | bytearray):
        schema = parse_schema(schema)
    return json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def fingerprint(schema) -> str:
    """Hex SHA-256 of the canonical form."""
    return hashlib.sha256(canonical(schema).encode("utf-8")).hexdigest()


def is_allowed(kind: str, policy: str) -> bool:
    return kind in _ALLOWED[_choice(policy, POLICIES, "policy")]


def parse_schema(text_or_obj) -> dict | bool:
    """Parse (if text) and validate a JSON Schema; raise InvalidSchema with a reason.

    Draft 4, 6, 7, 2019-09 or 2020-12, as "$schema" says (Draft 7 when it says nothing,
    as the reference registry reads it), checked against the draft's meta-schema by the
    `jsonschema` library. Every "$ref" must be local ("#...")
    and resolve; nothing is ever fetched.
    """
    value = text_or_obj
    if isinstance(value, bytes | bytearray):
        try:
            value = value.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidSchema("not JSON: the text is not UTF-8") from None
    if isinstance(value, str):
        try:
            value = json.loads(value, parse_constant=_no_constant)
        except RecursionError:
            raise SchemaTooComplex("the JSON text nests too deeply") from None
        except ValueError as exc:
            raise InvalidSchema(f"not JSON: {exc}") from None
    if not isinstance(value, dict | bool):
        raise InvalidSchema(f"a JSON Schema is an object or a boolean, not {json_type_name(value)}")
    _check_json(value)
    validator, draft = _validator_for(value)
    try:
        # The meta-schema check costs ~0.1 ms a node in `jsonschema` (2020-12 resolves
        # $dynamicRef at every sub-schema); most schemas use only plain keywords, which
        # are checked here in microseconds. Anything else, and anything this check
        # would refuse, goes to the library, whose verdict and message stand.
        fast = draft in ("Draft 7", "Draft 2020-12")
        if not (fast and plainly_valid(value, draft == "Draft 7")):
            validator.check_schema(value)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path)
        at = f" at #/{where}" if where else ""
        raise InvalidSchema(f"not a valid JSON Schema ({draft}): {exc.message}{at}") from None
    except RecursionError:
        raise SchemaTooComplex("the schema nests too deeply to validate") from None
    _check_refs(value)
    return value


def diff(original, update, *, policy: str = "STRICT") -> list[Difference]:
    """Every difference met reading data written with `original` through `update`.

    BACKWARD is diff(old, new); FORWARD is diff(new, old). The policy only steers the
    internal decisions that depend on compatibility (which anyOf branches match, whether a
    partially open content model covers a property, ...).
    """
    allowed = _ALLOWED[_choice(policy, POLICIES, "policy")]
    return _diff(_schema(original), _schema(update), allowed, ("original", "update"))


def check(new, previous: list, *, mode: str = "BACKWARD", policy: str = "STRICT") -> Verdict:
    """Judge `new` against the published schemas `previous` (oldest first).

    Plain modes compare with previous[-1] only, *_TRANSITIVE modes with every earlier
    version, NONE with nothing. BACKWARD diffs (old, new), FORWARD (new, old), FULL both.
    """
    mode = _choice(mode, MODES, "mode")
    policy = _choice(policy, POLICIES, "policy")
    if isinstance(previous, dict | bool | str | bytes):
        raise TypeError("previous is a list of schemas, oldest first")
    previous = list(previous or ())
    if mode == "NONE" or not previous:
        return Verdict(True, mode, policy)
    allowed = _ALLOWED[policy]
    new = _schema(new)
    olds = previous if mode.endswith("_TRANSITIVE") else previous[-1:]
    backward = not mode.startswith("FORWARD")
    forward = not mode.startswith("BACKWARD")
    found: dict[tuple[str, str], Difference] = {}
    for old in reversed(olds):  # the latest version's explanation first
        old = _schema(old)
        if backward:
            for d in _diff(old, new, allowed, ("old", "new")):
                found.setdefault((d.kind, d.path), d)
        if forward:
            for d in _diff(new, old, allowed, ("new", "old")):
                found.setdefault((d.kind, d.path), d)
    differences = tuple(found.values())
    breaking = tuple(d for d in differences if d.kind not in allowed)
    return Verdict(not breaking, mode, policy, differences, breaking)


def _choice(value, choices, what):
    if isinstance(value, str) and value.upper() in choices:
        return value.upper()
    raise ValueError(f"unknown compatibility {what} {value!r}; choose one of {', '.join(choices)}")


def _schema(value):
    if isinstance(value, dict | bool):
        return value
    if isinstance(value, str | bytes | bytearray):
        return parse_schema(value)
    raise InvalidSchema(f"a JSON Schema is an object or a boolean, not {json_type_name(value)}")


def _diff(original, update, allowed, labels) -> list[Difference]:
    walker = _Walker(original, update, allowed, labels, _State())
    try:
        walker.walk(original, update)
    except RecursionError:
        raise SchemaTooComplex("the schemas nest too deeply to compare") from None
    found: dict = {}
    for d in walker.out:
        found.setdefault((d.kind, d.path), d)
    return list(found.values())


# --------------------------------------------------------------------------- vocabulary

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

_DRAFTS = {
    f"{scheme}://json-schema.org/{path}": found
    for scheme in ("http", "https")
    for path, found in (
        ("draft-04/schema", (Draft4Validator, "Draft 4")),
        ("draft-06/schema", (Draft6Validator, "Draft 6")),
        ("draft-07/schema", (Draft7Validator, "Draft 7")),
        ("draft/2019-09/schema", (Draft201909Validator, "Draft 2019-09")),
        ("draft/2020-12/schema", (Draft202012Validator, "Draft 2020-12")),
    )
}
# The drafts in which a "$ref" makes its siblings ignored (2019-09 and 2020-12 apply them).
_REF_ALONE = frozenset({"Draft 4", "Draft 6", "Draft 7"})


# --------------------------------------------------------------------------- the walker


class _State:
    """Budget and depth, shared by a walker and its mirror image (used for `not`)."""

    __slots__ = ("left", "depth", "repeats")

    def __init__(self):
        self.left = MAX_WORK
        self.depth = 0
        self.repeats = MAX_REPEATS


class _Walker:
    """Compares two schemas; data written with the first is read with the second."""

    __slots__ = (
        "roots",
        "draft7",
        "allowed",
        "labels",
        "state",
        "memo",
        "active",
        "path",
        "out",
        "derefs",
        "anchors",
        "keep",
        "views",
        "uniques",
        "sets",
        "mirror",
    )

    def __init__(self, original, update, allowed, labels, state, path=None):
        self.roots = (original, update)
        self.draft7 = (_is_draft7(original), _is_draft7(update))
        self.allowed = allowed
        self.labels = labels
        self.state = state
        self.memo: dict = {}  # (id, id) -> (path where compared, differences found)
        self.active: set = set()  # pairs being compared, to cut recursion
        self.path: list = [] if path is None else path
        self.out: list = []
        self.derefs = ({}, {})  # per side: id($ref node) -> resolved schema
        self.anchors: list = [None, None]
        self.keep: list = []  # synthetic schemas whose ids are memo keys
        self.views: dict = {}
        self.uniques: dict = {}
        self.sets: dict = {}  # id(node or list) -> its enum values / required names
        self.mirror = None

    # ------------------------------------------------------------------ plumbing

    def walk(self, o, u):
        state = self.state
        state.left -= 1
        if state.left < 0:
            raise SchemaTooComplex(
                f"comparing the schemas takes more than {MAX_WORK} steps of work"
            )
        if type(o) is dict:
            if "$ref" in o or "$dynamicRef" in o:
                o = self._deref(o, 0)
                if o is False:
                    return
        elif o is True:
            o = _EMPTY
        elif o is False:
            return
        else:
            raise InvalidSchema(f"not a schema at {self._where()}: {json_type_name(o)}")
        if type(u) is dict:
            if "$ref" in u or "$dynamicRef" in u:
                u = self._deref(u, 1)
        elif u is True:
            u = _EMPTY
        elif u is not False:
            raise InvalidSchema(f"not a schema at {self._where()}: {json_type_name(u)}")
        if o is u:
            return
        key = (id(o), id(u))
        cached = self.memo.get(key)
        if cached is not None:
            if cached[1]:
                self._repeat(*cached)
            return
        active = self.active
        if key in active:  # met again inside itself: assume compatible (coinduction)
            return
        state.depth += 1
        if state.depth > MAX_DEPTH:
            raise SchemaTooComplex(f"the schemas nest deeper than {MAX_DEPTH} levels")
        active.add(key)
        out = self.out
        start = len(out)
        self._compare(o, u)
        active.discard(key)
        state.depth -= 1
        if len(out) == start:
            self.memo[key] = _NOTHING
        else:
            found = out[start:]
            found = tuple(dict.fromkeys(found)) if len(found) > 1 else tuple(found)
            self.memo[key] = (self._where(), found)

    def _repeat(self, where, found):
        """Report a pair compared before, at the place it is met now.

        A sub-schema shared through $ref may be met at exponentially many places; past
        MAX_REPEATS the differences stay at the place they were first found.
        """
        self._spend(len(found))
        here = self._where()
        state = self.state
        if here == where or state.repeats < len(found):
            self.out.extend(found)
            return
        state.repeats -= len(found)
        cut = 1 if where == "#" else len(where)
        for d in found:
            path = d.path
            if where == "#" or path == where or path.startswith(where + "/"):
                d = Difference(d.kind, here + path[cut:], d.message)
            self.out.append(d)

    def _try(self, o, u):
        """Compare aside; answer whether the policy allows everything found, and what."""
        saved = self.out
        self.out = found = []
        self.walk(o, u)
        self.out = saved
        allowed = self.allowed
        for d in found:
            if d.kind not in allowed:
                return False, found
        return True, found

    def _spend(self, units=1):
        state = self.state
        state.left -= units
        if state.left < 0:
            raise SchemaTooComplex(
                f"comparing the schemas takes more than {MAX_WORK} steps of work"
            )

    def _where(self, segment=None) -> str:
        path = self.path
        if segment is not None:
            return "#/" + "/".join(path) + "/" + segment if path else "#/" + segment
        return "#/" + "/".join(path) if path else "#"

    def _emit(self, kind, segment=None, a=None, b=None, detail=None):
        self._spend()
        o_label, u_label = self.labels
        message = _TEMPLATES[kind].format(o=o_label, u=u_label, a=a, b=b)
        if detail:
            message = f"{message[:-1]} ({detail})."
        self.out.append(Difference(kind, self._where(segment), message))

    def _detail(self, found):
        for d in found:
            if d.kind not in self.allowed:
                return f"{d.kind} at {d.path}"
        return None

    def _keep_or_report(self, o, u, kind, segment=None, **emit) -> bool:
        """Compare aside: when the policy allows all the differences found they stand,
        else `kind` is reported instead, naming the first it does not. Whether allowed."""
        ok, found = self._try(o, u)
        if ok:
            self.out.extend(found)
        else:
            self._emit(kind, segment, detail=self._detail(found), **emit)
        return ok

    def _first_allowed(self, pairs, kind) -> bool:
        """The first (original, update) pairing the policy allows stands, with `kind`."""
        for o, u in pairs:
            ok, found = self._try(o, u)
            if ok:
                self.out.extend(found)
                self._emit(kind)
                return True
        return False

    def _all_allowed(self, pairs, partly_kind) -> bool:
        """Every (original, update) pairing allowed: their differences stand; only some:
        `partly_kind`; none: False."""
        collected, matched = [], 0
        for o, u in pairs:
            ok, found = self._try(o, u)
            if ok:
                matched += 1
                collected.extend(found)
        if matched == len(pairs):
            self.out.extend(collected)
            return True
        if matched:
            self._emit(partly_kind)
            return True
        return False

    def _res(self, node, side):
        """The schema a node stands for: $ref followed, `true` as the empty schema."""
        if type(node) is dict:
            if "$ref" in node or "$dynamicRef" in node:
                return self._deref(node, side)
            return node
        if node is True:
            return _EMPTY
        return node

    def _deref(self, node, side, hops=0):
        cache = self.derefs[side]
        hit = cache.get(id(node))
        if hit is None:
            hit = cache[id(node)] = self._follow(node, side, hops)
        return hit

    def _follow(self, node, side, hops):
        self._spend()
        ref = node.get("$ref")
        if ref is None:
            ref = node.get("$dynamicRef")
        if type(ref) is not str:
            raise InvalidSchema(f"$ref at {self._where()} is not a string")
        if not ref.startswith("#"):
            raise InvalidSchema(_remote_reason(ref, self._where()))
        target = _pointer(self.roots[side], ref, lambda: self._anchors(side))
        if type(target) is dict and ("$ref" in target or "$dynamicRef" in target):
            if hops >= MAX_REF_HOPS:
                raise InvalidSchema(f"$ref {ref!r} at {self._where()} is circular")
            target = self._deref(target, side, hops + 1)
        elif target is True:
            target = _EMPTY
        elif type(target) is not dict and target is not False:
            raise InvalidSchema(f"$ref {ref!r} at {self._where()} does not point at a schema")
        if len(node) > 1 and target is not False:
            # 2020-12 applies a $ref's siblings too; Draft 7 ignores all but annotations
            draft7 = self.draft7[side]
            extra = [k for k in node if k not in _NOT_MERGED and not (draft7 and k in _VALIDATING)]
            if extra:
                merged = dict(target)
                for k in extra:
                    merged[k] = node[k]
                self.keep.append(merged)
                target = merged
        return target

    def _anchors(self, side):
        found = self.anchors[side]
        if found is None:
            found = self.anchors[side] = _collect(self.roots[side], check=False)[1]
        return found

    def _mirror(self):
        """The same comparison the other way round: data written with `update`."""
        if self.mirror is None:
            o_root, u_root = self.roots
            mirror = _Walker(u_root, o_root, self.allowed, self.labels[::-1], self.state, self.path)
            mirror.mirror = self
            self.mirror = mirror
        return self.mirror

    # ------------------------------------------------------------------ one pair

    def _compare(self, o, u):
        if u is False:
            self._emit("TYPE_CHANGED", a=_show_types(o.get("type")), b="nothing (false)")
            return
        for keyword, kind in _ANNOTATIONS:
            a = o.get(keyword, _MISSING)
            b = u.get(keyword, _MISSING)
            if a is not b and (a != b or type(a) is not type(b)):
                self._emit(kind, a=_show(a), b=_show(b))
        if _VALIDATING.isdisjoint(u):
            if not _VALIDATING.isdisjoint(o):
                self._emit("SCHEMA_REMOVED")
            return
        if _VALIDATING.isdisjoint(o):
            self._emit("SCHEMA_ADDED")
            return
        o_only = _only_combinator(o)
        u_only = _only_combinator(u)
        if o_only is not None or u_only is not None:
            if o_only is not None and u_only is not None:
                self._combined(o_only, o[o_only], u_only, u[u_only])
                return
            if u_only is not None:
                settled = self._into_combined(o, u_only, u[u_only])
            else:
                settled = self._from_combined(o_only, o[o_only], u)
            if not settled:
                self._emit("TYPE_CHANGED", a=_show_shape(o), b=_show_shape(u))
            return
        ot = o.get("type")
        ut = u.get("type")
        if (ot is not None or ut is not None) and ot != ut and self._types(ot, ut):
            return
        groups = 0
        for k in o:
            g = _GROUP.get(k)
            if g is not None:
                if g == _BOUND:
                    self._bound(k, o[k], u.get(k))
                else:
                    groups |= g
        for k in u:
            g = _GROUP.get(k)
            if g is not None:
                if g == _BOUND:
                    if k not in o:
                        self._bound(k, None, u[k])
                else:
                    groups |= g
        if not groups:
            return
        if groups & _ENUM:
            self._enum(o, u)
        if groups & _PATTERN:
            self._pattern(o, u)
        if groups & _MULTIPLE:
            self._multiple_of(o, u)
        if groups & _OBJECT:
            self._object(o, u)
        if groups & _ARRAY:
            self._array(o, u)
        if groups & _COMBINED:
            for crit in _COMBINATORS:
                a = o.get(crit)
                b = u.get(crit)
                if a is not None and b is not None:
                    self._combined(crit, a, crit, b)
                elif a is not None:
                    kind = "PRODUCT_TYPE_NARROWED" if crit == "allOf" else "SUM_TYPE_EXTENDED"
                    self._emit(kind, crit)
                elif b is not None:
                    kind = "PRODUCT_TYPE_EXTENDED" if crit == "allOf" else "SUM_TYPE_NARROWED"
                    self._emit(kind, crit)
        if groups & _NOT:
            self._not(o, u)
        if groups & _CONDITIONAL:
            self._conditional(o, u)

    def _types(self, ot, ut) -> bool:
        """Compare `type`; True when the types are unrelated and nothing else matters."""
        o_types = _type_set(ot)
        u_types = _type_set(ut)
        if o_types == u_types:
            return False
        a, b = _show_types(ot), _show_types(ut)
        if u_types is None:
            self._emit("TYPE_EXTENDED", a=a, b=b)
        elif o_types is None:
            self._emit("TYPE_NARROWED", a=a, b=b)
        elif all(_covered(t, u_types) for t in o_types):
            self._emit("TYPE_EXTENDED", a=a, b=b)
        elif all(_covered(t, o_types) for t in u_types):
            self._emit("TYPE_NARROWED", a=a, b=b)
        else:
            self._emit("TYPE_CHANGED", a=a, b=b)
            return True
        return False

    def _bound(self, keyword, a, b):
        if a == b and a is not None:
            return
        added, removed, increased, decreased = _BOUND_KINDS[keyword]
        if a is None:
            kind = added
        elif b is None:
            kind = removed
        elif b > a:
            kind = increased
        else:
            kind = decreased
        self._emit(kind, keyword, a=_show(a), b=_show(b))

    def _enum(self, o, u):
        a, a_keyword = self._values(o)
        b, b_keyword = self._values(u)
        if a == b:
            return
        segment = b_keyword or a_keyword
        if b is None:
            self._emit("ENUM_ARRAY_EXTENDED", segment, b="no restriction at all")
        elif a is None:
            self._emit("ENUM_ARRAY_NARROWED", segment, a=f"only {_count(b)}")
        elif b > a:
            self._emit("ENUM_ARRAY_EXTENDED", segment, b=f"{_count(b - a)} more")
        elif a > b:
            self._emit("ENUM_ARRAY_NARROWED", segment, a=f"{_count(a - b)} fewer")
        else:
            self._emit("ENUM_ARRAY_CHANGED", segment, a=len(a - b), b=len(b - a))

    def _values(self, node):
        hit = self.sets.get(id(node))
        if hit is None:
            hit = self.sets[id(node)] = _values(node)
            if hit[0]:
                self._spend(len(hit[0]) // 16)
        return hit

    def _names(self, names):
        """A required list as a set, built once per list."""
        if not names:
            return _NO_NAMES
        hit = self.sets.get(id(names))
        if hit is None:
            hit = self.sets[id(names)] = frozenset(n for n in names if type(n) is str)
            self.keep.append(names)
            self._spend(len(hit) // 16)
        return hit

    def _pattern(self, o, u):
        a = o.get("pattern")
        b = u.get("pattern")
        if a != b:
            kind = _presence_kind(a, b, "PATTERN_ADDED", "PATTERN_REMOVED") or "PATTERN_CHANGED"
            self._emit(kind, "pattern", a=_show(a), b=_show(b))

    def _multiple_of(self, o, u):
        a = o.get("multipleOf")
        b = u.get("multipleOf")
        if a == b:
            return
        kind = _presence_kind(a, b, "MULTIPLE_OF_ADDED", "MULTIPLE_OF_REMOVED")
        if kind is None:
            try:
                fa, fb = Fraction(str(a)), Fraction(str(b))
                if fa == fb:
                    return
                if fb % fa == 0:
                    kind = "MULTIPLE_OF_EXPANDED"
                elif fa % fb == 0:
                    kind = "MULTIPLE_OF_REDUCED"
                else:
                    kind = "MULTIPLE_OF_CHANGED"
            except (ValueError, ZeroDivisionError, TypeError):
                kind = "MULTIPLE_OF_CHANGED"
        self._emit(kind, "multipleOf", a=_show(a), b=_show(b))

    # ------------------------------------------------------------------ objects

    def _object(self, o, u):
        path = self.path
        op = o.get("properties") or _EMPTY
        up = u.get("properties") or _EMPTY
        o_required = o.get("required") or ()
        u_required = u.get("required") or ()
        o_names = self._names(o_required)
        u_names = self._names(u_required)
        if op or up:
            path.append("properties")
            walk = self.walk
            for key, os_ in op.items():
                us_ = up.get(key, _MISSING)
                path.append(_escape(key))
                if us_ is _MISSING:
                    self._property_removed(key, os_, u)
                else:
                    walk(os_, us_)
                path.pop()
            if up.keys() != op.keys():
                for key, us_ in up.items():
                    if key not in op:
                        path.append(_escape(key))
                        self._property_added(key, us_, o, o_names, u_names)
                        path.pop()
            path.pop()
        if o_names != u_names:
            self._required(o_required, u_required, o_names, u_names, op, up)
        for keyword, family in (
            ("additionalProperties", "ADDITIONAL_PROPERTIES"),
            ("unevaluatedProperties", "UNEVALUATED_PROPERTIES"),
        ):
            if keyword in o or keyword in u:
                self._additional(keyword, family, o.get(keyword, True), u.get(keyword, True))
        if "patternProperties" in o or "patternProperties" in u:
            self._pattern_properties(o, u)
        if (
            "dependencies" in o
            or "dependencies" in u
            or "dependentRequired" in o
            or "dependentRequired" in u
            or "dependentSchemas" in o
            or "dependentSchemas" in u
        ):
            self._dependencies(o, u)
        if "propertyNames" in o or "propertyNames" in u:
            path.append("propertyNames")
            self.walk(o.get("propertyNames", True), u.get("propertyNames", True))
            path.pop()

    def _model(self, node, side):
        if node.get("patternProperties"):
            return _PARTIAL
        extra = self._res(_extra_of(node), side)
        if extra is False:
            return _CLOSED
        if _VALIDATING.isdisjoint(extra):
            return _OPEN
        return _PARTIAL

    def _partial(self, node, key, side):
        """The schema a partially open model gives to `key`: None when it forbids the key."""
        patterns = node.get("patternProperties")
        if patterns:
            self._spend(len(patterns))
            for pattern, schema in patterns.items():
                hit = _search(pattern, key)
                if hit is None:
                    return _UNSURE
                if hit:
                    return None if self._res(schema, side) is False else schema
        extra = _extra_of(node)
        return None if self._res(extra, side) is False else extra

    def _property_removed(self, key, os_, u):
        name = _show(key)
        model = self._model(u, 1)
        if model is _OPEN:
            self._emit("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL", a=name)
            return
        schema = self._partial(u, key, 1)
        if schema is None:
            if self._res(os_, 0) is False:
                self._emit("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", a=name)
            else:
                self._emit("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", a=name)
        elif schema is _UNSURE:
            self._emit(
                "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                a=name,
                detail="a patternProperties regex is too complex to evaluate safely",
            )
        elif self._keep_or_report(
            os_, schema, "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=name
        ):
            self._emit("PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=name)

    def _property_added(self, key, us_, o, o_names, u_names):
        name = _show(key)
        target = self._res(us_, 1)
        required = key in u_names and key not in o_names
        default = type(target) is dict and "default" in target
        if self._model(o, 0) is _OPEN:
            if (
                type(target) is dict
                and _VALIDATING.isdisjoint(target)
                and (default or not required)
            ):
                kind = "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
            else:
                kind = _property_added_kind(required, default, "OPEN")
            self._emit(kind, a=name)
            return
        schema = self._partial(o, key, 0)
        if schema is _UNSURE:
            self._emit(
                "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
                a=name,
                detail="a patternProperties regex is too complex to evaluate safely",
            )
        elif schema is not None and self._keep_or_report(
            schema, us_, "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=name
        ):
            self._emit("PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=name)
        self._emit(_property_added_kind(required, default, "UNOPEN"), a=name)

    def _required(self, o_required, u_required, o_names, u_names, op, up):
        self._spend((len(o_required) + len(u_required)) // 16)
        self.path.append("required")
        for key in u_required:
            if key in o_names or type(key) is not str:
                continue
            if key in up:
                if key not in op:
                    continue  # reported with the added property
                target = self._res(up[key], 1)
            else:
                target = None
            if type(target) is dict and "default" in target:
                kind = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"
            else:
                kind = "REQUIRED_ATTRIBUTE_ADDED"
            self._emit(kind, _escape(key), a=_show(key))
        for key in o_required:
            if key in u_names or type(key) is not str:
                continue
            if key in op and key not in up:
                continue  # reported with the removed property
            self._emit("REQUIRED_ATTRIBUTE_REMOVED", _escape(key), a=_show(key))
        self.path.pop()

    def _additional(self, keyword, family, a, b):
        """additionalProperties / unevaluatedProperties / additionalItems / unevaluatedItems."""
        ra = self._res(a, 0)
        rb = self._res(b, 1)
        if (ra is False) != (rb is False):
            self._emit(f"{family}_ADDED" if ra is False else f"{family}_REMOVED", keyword)
            return
        if ra is False:
            return
        a_any = _VALIDATING.isdisjoint(ra)
        b_any = _VALIDATING.isdisjoint(rb)
        if a_any:
            if not b_any:
                self._emit(f"{family}_NARROWED", keyword)
            return
        if b_any:
            self._emit(f"{family}_EXTENDED", keyword)
            return
        self.path.append(keyword)
        if family.endswith("_ITEMS"):
            self.walk(a, b)
        else:
            # narrowing the schema of extra properties is LENIENT's business, not a type error
            self._keep_or_report(a, b, f"{family}_NARROWED")
        self.path.pop()

    def _pattern_properties(self, o, u):
        path = self.path
        op = o.get("patternProperties") or _EMPTY
        up = u.get("patternProperties") or _EMPTY
        path.append("patternProperties")
        for pattern, os_ in op.items():
            path.append(_escape(pattern))
            us_ = up.get(pattern, _MISSING)
            if us_ is not _MISSING:
                self.walk(os_, us_)
            else:  # names matching it now fall to the update's additionalProperties
                extra = _extra_of(u)
                if self._res(extra, 1) is False:
                    self._emit("ADDITIONAL_PROPERTIES_REMOVED")
                else:
                    self._keep_or_report(os_, extra, "ADDITIONAL_PROPERTIES_NARROWED")
            path.pop()
        for pattern, us_ in up.items():
            if pattern in op:
                continue
            path.append(_escape(pattern))
            extra = _extra_of(o)
            if self._res(extra, 0) is False:
                self._emit("ADDITIONAL_PROPERTIES_ADDED")
            else:
                self._keep_or_report(extra, us_, "ADDITIONAL_PROPERTIES_NARROWED")
            path.pop()
        path.pop()

    def _dependencies(self, o, u):
        o_arrays, o_schemas = _dependencies_of(o)
        u_arrays, u_schemas = _dependencies_of(u)
        self._spend(len(o_arrays) + len(u_arrays) + len(o_schemas) + len(u_schemas))
        for key, (keyword, a) in o_arrays.items():
            found = u_arrays.get(key)
            segment = f"{(found or (keyword,))[0]}/{_escape(key)}"
            if found is None:
                self._emit("DEPENDENCY_ARRAY_REMOVED", segment, a=_show(key))
                continue
            sa, sb = set(a), set(found[1])
            if sa == sb:
                continue
            if sb > sa:
                kind = "DEPENDENCY_ARRAY_EXTENDED"
            elif sa > sb:
                kind = "DEPENDENCY_ARRAY_NARROWED"
            else:
                kind = "DEPENDENCY_ARRAY_CHANGED"
            self._emit(kind, segment, a=_show(key))
        for key, (keyword, _) in u_arrays.items():
            if key not in o_arrays:
                self._emit("DEPENDENCY_ARRAY_ADDED", f"{keyword}/{_escape(key)}", a=_show(key))
        for key, (keyword, a) in o_schemas.items():
            found = u_schemas.get(key)
            if found is None:
                self._emit("DEPENDENCY_SCHEMA_REMOVED", f"{keyword}/{_escape(key)}", a=_show(key))
                continue
            self.path.append(f"{found[0]}/{_escape(key)}")
            self.walk(a, found[1])
            self.path.pop()
        for key, (keyword, _) in u_schemas.items():
            if key not in o_schemas:
                self._emit("DEPENDENCY_SCHEMA_ADDED", f"{keyword}/{_escape(key)}", a=_show(key))

    # ------------------------------------------------------------------ arrays

    def _array(self, o, u):
        path = self.path
        o_tuple, o_tuple_kw, o_rest, o_rest_kw = _items_of(o)
        u_tuple, u_tuple_kw, u_rest, u_rest_kw = _items_of(u)
        if o_tuple is None and u_tuple is None:
            if "items" in o or "items" in u:
                path.append("items")
                self.walk(o_rest, u_rest)
                path.pop()
        else:
            self._tuple(o_tuple or (), u_tuple or (), u_tuple_kw or o_tuple_kw, o_rest, u_rest)
            rest_kw = u_rest_kw if u_tuple is not None else o_rest_kw
            self._additional(rest_kw, "ADDITIONAL_ITEMS", o_rest, u_rest)
        if "unevaluatedItems" in o or "unevaluatedItems" in u:
            self._additional(
                "unevaluatedItems",
                "UNEVALUATED_ITEMS",
                o.get("unevaluatedItems", True),
                u.get("unevaluatedItems", True),
            )
        a = o.get("contains", _MISSING)
        b = u.get("contains", _MISSING)
        if a is not _MISSING or b is not _MISSING:
            if a is _MISSING:
                self._emit("SCHEMA_ADDED", "contains")
            elif b is _MISSING:
                self._emit("SCHEMA_REMOVED", "contains")
            else:
                path.append("contains")
                self.walk(a, b)
                path.pop()
        a = o.get("uniqueItems") is True
        b = u.get("uniqueItems") is True
        if a != b:
            self._emit("UNIQUE_ITEMS_REMOVED" if a else "UNIQUE_ITEMS_ADDED", "uniqueItems")

    def _tuple(self, ot, ut, keyword, o_rest, u_rest):
        path = self.path
        shared = min(len(ot), len(ut))
        for i in range(shared):
            path.append(f"{keyword}/{i}")
            self.walk(ot[i], ut[i])
            path.pop()
        if len(ot) > shared:
            rest = self._res(u_rest, 1)
            for i in range(shared, len(ot)):
                path.append(f"{keyword}/{i}")
                if rest is False:
                    if self._res(ot[i], 0) is False:
                        self._emit("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL", a=i)
                    else:
                        self._emit("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL", a=i)
                elif _VALIDATING.isdisjoint(rest):
                    self._emit("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL", a=i)
                elif self._keep_or_report(
                    ot[i], u_rest, "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=i
                ):
                    self._emit("ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=i)
                path.pop()
        if len(ut) > shared:
            rest = self._res(o_rest, 0)
            for i in range(shared, len(ut)):
                path.append(f"{keyword}/{i}")
                if rest is False:
                    self._emit("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL", a=i)
                elif _VALIDATING.isdisjoint(rest):
                    item = self._res(ut[i], 1)
                    if type(item) is dict and _VALIDATING.isdisjoint(item):
                        self._emit("ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL", a=i)
                    else:
                        self._emit("ITEM_ADDED_TO_OPEN_CONTENT_MODEL", a=i)
                elif self._keep_or_report(
                    o_rest, ut[i], "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=i
                ):
                    self._emit("ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL", a=i)
                path.pop()

    # ------------------------------------------------------------------ combinators

    def _combined(self, o_crit, o_list, u_crit, u_list):
        if o_crit != u_crit:
            n0, m0 = len(o_list), len(u_list)
            if (
                u_crit == "anyOf"
                or (n0 == 1 and (m0 == 1 or u_crit == "oneOf"))
                or (m0 == 1 and o_crit == "allOf")
            ):
                self._emit("COMBINED_TYPE_EXTENDED", a=o_crit, b=u_crit)
            else:
                self._emit("COMBINED_TYPE_CHANGED", a=o_crit, b=u_crit)
                return
        ou = self._unique(o_list)
        uu = self._unique(u_list)
        n, m = len(ou), len(uu)
        if n < m:
            self._emit("PRODUCT_TYPE_EXTENDED" if u_crit == "allOf" else "SUM_TYPE_EXTENDED")
        elif n > m:
            self._emit("PRODUCT_TYPE_NARROWED" if o_crit == "allOf" else "SUM_TYPE_NARROWED")
        if n * m > MAX_BRANCH_PAIRS:
            raise SchemaTooComplex(
                f"{o_crit} with {n} and {u_crit} with {m} subschemas at {self._where()}"
                f" would need more than {MAX_BRANCH_PAIRS} pairings"
            )
        path = self.path
        edges: dict = {}
        twin = {}
        for j, (text, _) in enumerate(uu):
            twin.setdefault(text, j)

        def compatible(i, j):
            key = (i, j)
            found = edges.get(key, _MISSING)
            if found is _MISSING:
                path.append(f"{o_crit}/{i}")
                ok, found = self._try(ou[i][1], uu[j][1])
                path.pop()
                found = found if ok else None
                edges[key] = found
            return found is not None

        owner = [-1] * m  # owner[j]: the original subschema matched with update subschema j

        def augment(i, seen):
            first = twin.get(ou[i][0])
            order = range(m) if first is None else (first, *(j for j in range(m) if j != first))
            for j in order:
                if j in seen:
                    continue
                self._spend()
                if not compatible(i, j):
                    continue
                seen.add(j)
                if owner[j] < 0 or augment(owner[j], seen):
                    owner[j] = i
                    return True
            return False

        for i in range(n):
            augment(i, set())
        pairs = sorted((i, j) for j, i in enumerate(owner) if i >= 0)
        for pair in pairs:
            self.out.extend(edges[pair])
        if len(pairs) < min(n, m):
            self._emit("COMBINED_TYPE_SUBSCHEMAS_CHANGED", a=o_crit, b=u_crit)

    def _unique(self, subschemas):
        """The distinct subschemas of a combinator, each with its canonical text."""
        hit = self.uniques.get(id(subschemas))
        if hit is None:
            seen: dict = {}
            for schema in subschemas:
                try:
                    text = json.dumps(schema, sort_keys=True, separators=(",", ":"))
                except (TypeError, ValueError) as exc:
                    raise InvalidSchema(f"not JSON at {self._where()}: {exc}") from None
                seen.setdefault(text, schema)
            hit = self.uniques[id(subschemas)] = list(seen.items())
            self.keep.append(subschemas)
        return hit

    def _into_combined(self, o, crit, branches) -> bool:
        """A plain schema becomes a combination."""
        if len(branches) == 1:  # a one-element combination is its member
            self.walk(o, branches[0])
            return True
        if crit != "allOf":
            if self._first_allowed([(o, branch) for branch in branches], "SUM_TYPE_EXTENDED"):
                return True
            types = o.get("type")
            if type(types) is list and len(set(types)) > 1:
                # a type union is itself a sum: each member needs a compatible branch
                collected = []
                for view in self._type_views(o):
                    for branch in branches:
                        ok, found = self._try(view, branch)
                        if ok:
                            collected.extend(found)
                            break
                    else:
                        return False
                self.out.extend(collected)
                if len(branches) > len(set(types)):
                    self._emit("SUM_TYPE_EXTENDED")
                return True
            return False
        return self._all_allowed([(o, branch) for branch in branches], "PRODUCT_TYPE_EXTENDED")

    def _from_combined(self, crit, branches, u) -> bool:
        """A combination becomes a plain schema."""
        if len(branches) == 1:
            self.walk(branches[0], u)
            return True
        pairs = [(branch, u) for branch in branches]
        if crit == "allOf":
            return self._first_allowed(pairs, "PRODUCT_TYPE_NARROWED")
        # every alternative still readable, or only some
        return self._all_allowed(pairs, "SUM_TYPE_NARROWED")

    def _type_views(self, o):
        views = self.views.get(id(o))
        if views is None:
            views = self.views[id(o)] = [{**o, "type": t} for t in dict.fromkeys(o["type"])]
        return views

    def _not(self, o, u):
        a = o.get("not", _MISSING)
        b = u.get("not", _MISSING)
        if a is _MISSING:
            self._emit("NOT_TYPE_EXTENDED", "not")
            return
        if b is _MISSING:
            self._emit("NOT_TYPE_NARROWED", "not")
            return
        self.path.append("not")
        # u's `not` must exclude no more than o's: compare the negated schemas reversed
        ok, found = self._mirror()._try(b, a)
        if ok:
            self._emit("NOT_TYPE_NARROWED")
        else:
            self._emit("NOT_TYPE_EXTENDED", detail=self._mirror()._detail(found))
        self.path.pop()

    def _conditional(self, o, u):
        a = o.get("if", _MISSING)
        b = u.get("if", _MISSING)
        if a is _MISSING and b is _MISSING:
            return  # then/else without if do nothing
        if b is _MISSING:
            self._emit("SCHEMA_REMOVED", "if")
            return
        if a is _MISSING:
            if "then" in u or "else" in u:
                self._emit("SCHEMA_ADDED", "if")
            return
        if not _same_json(a, b):
            self._emit("COMBINED_TYPE_CHANGED", "if", a="if/then/else", b="another condition")
            return
        for keyword in ("then", "else"):
            x = o.get(keyword, True)
            y = u.get(keyword, True)
            if x is not True or y is not True:
                self.path.append(keyword)
                self.walk(x, y)
                self.path.pop()


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


def _same_json(a, b):
    return a is b or (a == b and canonical(a) == canonical(b))


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


def json_type_name(value) -> str:
    """How a message names a JSON value's type ("an object", "a string", ...)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


def _no_constant(name):
    raise ValueError(f"{name} is not a JSON number")


def _remote_reason(ref, where) -> str:
    return (
        f"$ref {ref!r} at {where} is not local: only references inside the schema ('#...')"
        " are allowed, and nothing is ever fetched"
    )


def _pointer(root, ref, anchors):
    fragment = ref[1:]
    if not fragment:
        return root
    if fragment[0] != "/":
        name = unquote(fragment)
        target = anchors().get(name, _MISSING)
        if target is _MISSING:
            raise InvalidSchema(f"$ref {ref!r} names an anchor the schema does not define")
        return target
    node = root
    for raw in fragment[1:].split("/"):
        part = unquote(raw) if "%" in raw else raw
        if "~" in part:
            part = part.replace("~1", "/").replace("~0", "~")
        if type(node) is dict:
            if part not in node:
                raise InvalidSchema(f"$ref {ref!r} does not resolve inside the schema")
            node = node[part]
        elif type(node) is list and part.isdigit() and part.isascii() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise InvalidSchema(f"$ref {ref!r} does not resolve inside the schema")
    return node


def _is_draft7(root) -> bool:
    """Whether the schema's draft ignores a "$ref"'s siblings: Draft 4, 6 and 7, and a
    schema that names no draft (read as Draft 7)."""
    if type(root) is not dict:
        return True
    uri = root.get("$schema")
    if type(uri) is not str:
        return True
    found = _DRAFTS.get(uri.strip().rstrip("#"))
    return found is None or found[1] in _REF_ALONE


def _validator_for(schema):
    if type(schema) is bool or "$schema" not in schema:
        return Draft7Validator, "Draft 7"
    uri = schema["$schema"]
    if type(uri) is not str:
        raise InvalidSchema("$schema must be a string")
    found = _DRAFTS.get(uri.strip().rstrip("#"))
    if found is None:
        raise InvalidSchema(
            f"unsupported $schema {uri!r}: Steward accepts Draft 4, Draft 6, Draft 7"
            " (http://json-schema.org/draft-07/schema#, also when $schema is absent),"
            " Draft 2019-09 and Draft 2020-12 (https://json-schema.org/draft/2020-12/schema)"
        )
    return found


def _check_json(document):
    """Plain JSON values only, not too deep, not too many."""
    stack = [(document, 1)]
    count = members = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > MAX_JSON_NODES:
            raise SchemaTooComplex(f"the schema has more than {MAX_JSON_NODES} JSON values")
        kind = type(node)
        if kind is dict:
            if depth > MAX_JSON_DEPTH:
                raise SchemaTooComplex(f"the schema nests deeper than {MAX_JSON_DEPTH} levels")
            members += len(node)
            if members > MAX_JSON_MEMBERS:
                raise SchemaTooComplex(
                    f"the schema has more than {MAX_JSON_MEMBERS} keywords and properties"
                )
            for key, value in node.items():
                if type(key) is not str:
                    raise InvalidSchema(f"not JSON: an object key is {json_type_name(key)}")
                stack.append((value, depth + 1))
        elif kind is list:
            if depth > MAX_JSON_DEPTH:
                raise SchemaTooComplex(f"the schema nests deeper than {MAX_JSON_DEPTH} levels")
            stack.extend((value, depth + 1) for value in node)
        elif kind is float:
            if node != node or node in (_INF, -_INF):
                raise InvalidSchema("not JSON: NaN and Infinity are not JSON numbers")
        elif kind not in (str, int, bool) and node is not None:
            raise InvalidSchema(f"not JSON: {json_type_name(node)} is not a JSON value")


def _subschemas(node):
    """(path segment, sub-schema) for every sub-schema position of a schema object."""
    for keyword in _ONE_SCHEMA:
        child = node.get(keyword, _MISSING)
        if child is not _MISSING and (type(child) is dict or type(child) is bool):
            yield keyword, child
    for keyword in _SCHEMA_LISTS:
        children = node.get(keyword)
        if type(children) is list:
            for i, child in enumerate(children):
                if type(child) is dict or type(child) is bool:
                    yield f"{keyword}/{i}", child
    for keyword in _SCHEMA_MAPS:
        children = node.get(keyword)
        if type(children) is dict:
            for key, child in children.items():
                if type(child) is dict or type(child) is bool:
                    yield f"{keyword}/{_escape(key)}", child


def _collect(root, *, check: bool):
    """The $refs (with where they are) and the anchors of a schema; checks depth if asked."""
    refs = []
    anchors: dict = {}
    stack = [(root, "#", 1)]
    while stack:
        node, where, depth = stack.pop()
        if type(node) is not dict:
            continue
        if check and depth > MAX_DEPTH:
            raise SchemaTooComplex(f"the schema nests deeper than {MAX_DEPTH} levels at {where}")
        for keyword in _REF_KEYS:
            if keyword in node:
                refs.append((node[keyword], where, node))
        for keyword in ("$anchor", "$dynamicAnchor"):
            name = node.get(keyword)
            if type(name) is str:
                anchors.setdefault(name, node)
        legacy = node.get("$id")  # Draft 7 spells a plain-name anchor "$id": "#name"
        if type(legacy) is str and legacy.startswith("#") and len(legacy) > 1:
            anchors.setdefault(legacy[1:], node)
        for segment, child in _subschemas(node):
            stack.append((child, f"{where}/{segment}", depth + 1))
    return refs, anchors


def _check_refs(root):
    refs, anchors = _collect(root, check=True)
    for ref, where, _ in refs:
        if type(ref) is not str:
            raise InvalidSchema(f"$ref at {where} is not a string")
        if not ref.startswith("#"):
            raise InvalidSchema(_remote_reason(ref, where))
    settled: set = set()  # ids of $ref nodes whose chain ends at a schema
    for ref, where, node in refs:
        chain = [id(node)]
        target = _pointer(root, ref, lambda: anchors)
        while (
            type(target) is dict
            and ("$ref" in target or "$dynamicRef" in target)
            and id(target) not in settled
        ):
            if id(target) in chain or len(chain) > MAX_REF_HOPS:
                raise InvalidSchema(f"$ref {ref!r} at {where} is circular")
            chain.append(id(target))
            following = target.get("$ref", target.get("$dynamicRef"))
            target = _pointer(root, following, lambda: anchors)
        if type(target) is not dict and type(target) is not bool:
            raise InvalidSchema(f"$ref {ref!r} at {where} does not point at a schema")
        settled.update(chain)


_REGEXES: dict = {}


def _search(pattern, name):
    """Whether a patternProperties regex matches a name; None when unsafe to tell."""
    regex = _REGEXES.get(pattern, _MISSING)
    if regex is _MISSING:
        regex = None
        if not _risky(pattern):
            try:
                regex = re.compile(pattern)
            except (re.error, RecursionError, OverflowError, TypeError):
                regex = None
        if len(_REGEXES) > 512:
            _REGEXES.clear()
        _REGEXES[pattern] = regex
    if regex is None or len(name) > 1024:
        return None
    return regex.search(name) is not None


def _risky(pattern) -> bool:
    """Backreferences, or a repeated group that repeats or branches inside: may backtrack
    exponentially, and nothing here may hang on a schema's regex."""
    if type(pattern) is not str or len(pattern) > 1000:
        return True
    groups: list = []  # per open group: whether it repeats or branches inside
    in_class = False
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 < n and (pattern[i + 1].isdigit() and pattern[i + 1] != "0"):
                return True
            if i + 1 < n and pattern[i + 1] == "k":
                return True
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
        elif c == "(":
            groups.append(False)
            if i + 1 < n and pattern[i + 1] == "?":
                i += 1  # (?:  (?=  (?P<...>: the ? is not a quantifier
        elif c == ")":
            inner = groups.pop() if groups else False
            following = pattern[i + 1] if i + 1 < n else ""
            if inner and following in ("*", "+", "{"):
                return True
            if groups:
                groups[-1] = groups[-1] or inner or following in ("*", "+", "{", "?")
        elif c in "*+{?|" and groups:
            groups[-1] = True
        i += 1
    return False


# --------------------------------------------------------------------------- fast meta-check

_META_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_META_STRINGS = frozenset({"title", "description", "$comment", "format"})
_META_ANYTHING = frozenset({"default", "const", "examples", "deprecated", "readOnly", "writeOnly"})
_META_COUNTS = frozenset(
    {"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"}
)
_META_NUMBERS = frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})
_META_ONE = frozenset({"additionalProperties", "not", "items", "propertyNames", "contains"})
_META_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties"})
_META_LISTS = frozenset({"allOf", "anyOf", "oneOf"})
_META_URI = re.compile(r"^[A-Za-z0-9_\-./#~%:]*$")


def plainly_valid(schema, draft7: bool) -> bool:
    """True when every sub-schema uses only plain keywords, each well-formed: then the
    draft's meta-schema accepts it too. False means "ask the library", not "invalid"."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if type(node) is bool:
            continue
        if type(node) is not dict:
            return False
        for key, value in node.items():
            kind = type(value)
            if key in _META_STRINGS:
                if kind is not str:
                    return False
            elif key in _META_ANYTHING:
                if key == "examples" and kind is not list:
                    return False
                if key in ("deprecated", "readOnly", "writeOnly") and kind is not bool:
                    return False
            elif key in ("$ref", "$id", "$schema"):
                if kind is not str or not _META_URI.match(value):
                    return False
            elif key == "type":
                names = [value] if kind is str else value if kind is list else None
                if not names or not all(type(n) is str and n in _META_TYPES for n in names):
                    return False
                if kind is list and len(set(names)) != len(names):
                    return False
            elif key == "required":
                if kind is not list or not all(type(n) is str for n in value):
                    return False
                if len(set(value)) != len(value):
                    return False
            elif key == "enum":
                if kind is not list:
                    return False
            elif key in _META_COUNTS:
                if kind is not int or value < 0:
                    return False
            elif key in _META_NUMBERS:
                if kind not in (int, float):
                    return False
            elif key == "multipleOf":
                if kind not in (int, float) or value <= 0:
                    return False
            elif key == "uniqueItems":
                if kind is not bool:
                    return False
            elif key == "pattern":
                if kind is not str:
                    return False
                try:
                    re.compile(value)
                except re.error:
                    return False
            elif key in _META_ONE:
                if key == "items" and kind is list and draft7:
                    stack.extend(value)
                    continue
                stack.append(value)
            elif key in _META_MAPS:
                if kind is not dict:
                    return False
                if key == "patternProperties":
                    try:
                        for pattern in value:
                            re.compile(pattern)
                    except re.error:
                        return False
                stack.extend(value.values())
            elif key in _META_LISTS:
                if kind is not list or not value:
                    return False
                stack.extend(value)
            else:
                return False
    return True


# --------------------------------------------------------------------------- references

# Where a bundled schema keeps the schemas its references name: a member of its
# definitions whose key no hand-written schema would use, so that bundling undoes cleanly.
REFERENCE_PREFIX = "steward:reference:"


def _defs_keyword(root) -> str:
    """`$defs` in the drafts that define it, `definitions` in the drafts before."""
    return "definitions" if _is_draft7(root) else "$defs"


def _pointer_segment(key: str) -> str:
    # JSON pointer escaping, then percent-encoding: _pointer undoes both, in that order.
    return quote(key.replace("~", "~0").replace("/", "~1"), safe="")


def _rewrite_refs(root, rewrite) -> None:
    """Apply `rewrite` to every `$ref` of the schema positions under `root`, in place."""
    stack = [root]
    while stack:
        node = stack.pop()
        if type(node) is not dict:
            continue
        for keyword in _REF_KEYS:
            ref = node.get(keyword)
            if type(ref) is str:
                node[keyword] = rewrite(ref)
        stack.extend(child for _, child in _subschemas(node))


def bundle(document, references: list[tuple[str, object]]):
    """The schema with the schemas its references name embedded, so that it stands alone.

    `references` is (name, referenced schema) in the order the registration gave them; a
    referenced schema is itself a bundle when it has references of its own. Every `$ref`
    whose URI is a reference's name (or, when the schema has an `$id`, resolves to the same
    URI as the name) points at the embedded copy afterwards: the registry's stored schema
    is what `$ref` resolves to, and nothing is fetched. The result is an ordinary JSON
    Schema with local `$ref`s only, which parse_schema() validates and check() compares,
    so a change inside a referenced schema shows through the schema that references it.
    """
    if type(document) is not dict or not references:
        return document
    bundled = json.loads(json.dumps(document))
    base = bundled.get("$id") if type(bundled.get("$id")) is str else ""
    keyword = _defs_keyword(bundled)
    targets = {}
    for name, _referenced in references:
        key = REFERENCE_PREFIX + name
        targets[name] = f"#/{keyword}/{_pointer_segment(key)}"
        if base:
            targets.setdefault(urljoin(base, name), targets[name])

    def to_embedded(ref: str) -> str:
        uri, hash_, fragment = ref.partition("#")
        if not uri:
            return ref
        target = targets.get(uri) or (targets.get(urljoin(base, uri)) if base else None)
        if target is None:
            return ref  # not a reference's: parse_schema refuses it as remote
        return target + (fragment if fragment.startswith("/") else "")

    _rewrite_refs(bundled, to_embedded)
    defs = bundled.setdefault(keyword, {})
    if type(defs) is not dict:
        raise InvalidSchema(f"{keyword} is not an object")
    for name, referenced in references:
        key = REFERENCE_PREFIX + name
        embedded = json.loads(json.dumps(referenced))
        if type(embedded) is dict:
            # its own draft and base URI would change how the copy's $refs resolve
            embedded.pop("$schema", None)
            embedded.pop("$id", None)
            prefix = f"#/{keyword}/{_pointer_segment(key)}"
            _rewrite_refs(
                embedded,
                lambda ref, prefix=prefix: (
                    prefix + ref[1:] if ref.startswith("#/") else (prefix if ref == "#" else ref)
                ),
            )
        defs[key] = embedded
    return bundled


def unbundle(document, names: list[str]):
    """The schema as it was registered: bundle() undone for the references `names`."""
    if type(document) is not dict or not names:
        return document
    plain = json.loads(json.dumps(document))
    keyword = _defs_keyword(plain)
    defs = plain.get(keyword)
    if type(defs) is dict:
        for name in names:
            defs.pop(REFERENCE_PREFIX + name, None)
        if not defs:
            plain.pop(keyword)
    embedded = {f"#/{keyword}/{_pointer_segment(REFERENCE_PREFIX + n)}": n for n in names}

    def to_name(ref: str) -> str:
        for target, name in embedded.items():
            if ref == target:
                return name
            if ref.startswith(target + "/"):
                return f"{name}#{ref[len(target) :]}"
        return ref

    _rewrite_refs(plain, to_name)
    return plain
