"""The one JSON loader of the schema types: text decoded, and a decoded document bounded
before anything recursive reads it. Each type passes its own limits and wording."""

from __future__ import annotations

import json

from apps.registry.formats.errors import InvalidSchema, SchemaTooComplex

_INF = float("inf")


def decode(text):
    """JSON text (a str, or UTF-8 bytes) decoded, with NaN and Infinity refused."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidSchema("not JSON: the text is not UTF-8") from None
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise SchemaTooComplex("the JSON text nests too deeply") from None
    except ValueError as exc:
        raise InvalidSchema(f"not JSON: {exc}") from None


def bound(
    document,
    *,
    max_depth: int,
    max_nodes: int,
    max_members: int | None = None,
    values_nest: bool = False,
    plain_values: bool = False,
    too_deep: str,
    bad_key: str,
) -> None:
    """Refuse a document with more than `max_nodes` values, or nested deeper than
    `max_depth` (containers only, or every value with `values_nest`), or with more than
    `max_members` object members in all. `plain_values` also refuses what JSON cannot
    write (NaN, Infinity, other Python objects). `too_deep` and `bad_key` are the type's
    words; `bad_key` may name the key's type as {type}."""
    stack = [(document, 1)]
    count = members = 0
    while stack:
        node, depth = stack.pop()
        count += 1
        if count > max_nodes:
            raise SchemaTooComplex(f"the schema has more than {max_nodes} JSON values")
        kind = type(node)
        if depth > max_depth and (values_nest or kind is dict or kind is list):
            raise SchemaTooComplex(too_deep)
        if kind is dict:
            if max_members is not None:
                members += len(node)
                if members > max_members:
                    raise SchemaTooComplex(
                        f"the schema has more than {max_members} keywords and properties"
                    )
            for key, value in node.items():
                if type(key) is not str:
                    raise InvalidSchema(bad_key.format(type=json_type_name(key)))
                stack.append((value, depth + 1))
        elif kind is list:
            stack.extend((value, depth + 1) for value in node)
        elif not plain_values:
            continue
        elif kind is float:
            if node != node or node in (_INF, -_INF):
                raise InvalidSchema("not JSON: NaN and Infinity are not JSON numbers")
        elif kind not in (str, int, bool) and node is not None:
            raise InvalidSchema(f"not JSON: {json_type_name(node)} is not a JSON value")


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
