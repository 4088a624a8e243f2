"""The Avro type names, limits and wording the parser and the checker share."""

from __future__ import annotations

import json
import re

KINDS = (
    "FIXED_SIZE_MISMATCH",
    "MISSING_ENUM_SYMBOLS",
    "MISSING_UNION_BRANCH",
    "NAME_MISMATCH",
    "READER_FIELD_MISSING_DEFAULT_VALUE",
    "TYPE_MISMATCH",
)
PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})

MAX_DEPTH = 64  # nested types in a schema (a record's field, an array's items, a branch ...)
MAX_WALK_DEPTH = 128  # nested pairs in a comparison, named types followed included
MAX_WORK = 200_000  # type pairs compared in one can_read()
MAX_REPORTED = 500  # differences kept from one can_read()
MAX_JSON_DEPTH = 256  # nested JSON containers in a document given to parse_schema
MAX_JSON_NODES = 50_000  # JSON values in such a document

# (reader type, writer type) pairs the specification resolves by promotion
_PROMOTIONS = frozenset(
    {
        ("long", "int"),
        ("float", "int"),
        ("float", "long"),
        ("double", "int"),
        ("double", "long"),
        ("double", "float"),
        ("string", "bytes"),
        ("bytes", "string"),
    }
)
_NAMED = frozenset({"record", "enum", "fixed"})
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_ORDERS = frozenset({"ascending", "descending", "ignore"})
_INT_RANGE = (-(2**31), 2**31 - 1)
_LONG_RANGE = (-(2**63), 2**63 - 1)
_FLOAT_WORDS = frozenset({"NaN", "Infinity", "-Infinity"})
_MISSING = object()
_DEFINING = frozenset({"record", "error", "enum", "fixed"})


# --------------------------------------------------------------------------- words


def _show(node) -> str:
    kind = node.kind
    if kind in _NAMED:
        return f"{kind} {node.name}"
    if kind == "array":
        return f"an array of {_show(node.items)}"
    if kind == "map":
        return f"a map of {_show(node.values)}"
    if kind == "union":
        return "a union of " + ", ".join(_show(b) for b in node.branches)
    if node.logical:
        return f"{kind} ({node.logical})"
    return kind


def _branches(numbered) -> str:
    words = [f"{_show(branch)} (branch {n})" for n, branch in numbered]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def _symbols(symbols) -> str:
    shown = ", ".join(symbols[:10]) + (
        f" and {len(symbols) - 10} more" if len(symbols) > 10 else ""
    )
    return f"symbol{'s' if len(symbols) > 1 else ''} {shown}"


def _at(path: str) -> str:
    return path or "/"


def _show_json(value) -> str:
    if value is _MISSING:
        return "nothing"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
