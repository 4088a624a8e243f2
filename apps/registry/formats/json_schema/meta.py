"""The drafts the registry accepts, and the fast check of a schema against its draft's
meta-schema."""

from __future__ import annotations

import re

from jsonschema import (
    Draft4Validator,
    Draft6Validator,
    Draft7Validator,
    Draft201909Validator,
    Draft202012Validator,
)

from apps.registry.formats.errors import InvalidSchema

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
