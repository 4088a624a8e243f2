"""The structural rules of an Avro schema as written, checked before fastavro parses it."""

from __future__ import annotations

import math

from apps.registry.formats.avro.vocabulary import (
    _MISSING,
    _NAME,
    _ORDERS,
    MAX_DEPTH,
    PRIMITIVES,
    _at,
    _show_json,
)
from apps.registry.formats.errors import InvalidSchema, SchemaTooComplex
from apps.registry.formats.loader import json_type_name


class _Shape:
    """The structural rules the reference registry's parser applies and fastavro does not,
    checked on the JSON as written, so that the reason names the place.

    `type()` returns the schema to give fastavro: the same object, or a copy without the
    malformed `decimal` logical types, which the reference reads as their underlying type
    and fastavro would refuse."""

    def type(self, node, path, depth, in_union):
        if depth > MAX_DEPTH:
            raise SchemaTooComplex(f"the schema nests more than {MAX_DEPTH} types (at {path})")
        kind = type(node)
        if kind is str:
            if not node:
                raise InvalidSchema(f"an empty type name at {_at(path)}")
            return node
        if kind is list:
            if in_union:
                raise InvalidSchema(f"a union directly inside a union at {_at(path)}")
            return self.union(node, path, depth)
        if kind is not dict:
            raise InvalidSchema(
                f"a type is a name, an object or an array (a union), not {json_type_name(node)}, "
                f"at {_at(path)}"
            )
        typ = node.get("type", _MISSING)
        if typ is _MISSING:
            raise InvalidSchema(f"a schema object without 'type' at {_at(path)}")
        if type(typ) is not str:
            raise InvalidSchema(
                f"'type' of a schema object must be a type name, not {json_type_name(typ)}, "
                f"at {path}/type (only a field's 'type' holds a whole schema)"
            )
        if typ not in PRIMITIVES and typ not in _KEYWORDS:
            # `{"type": "com.acme.Name"}` names a type defined elsewhere, as Avro Java reads
            # it (its other attributes are not the named type's)
            return typ
        if typ in ("record", "error"):
            node = self.record(node, path, depth, typ)
        elif typ == "enum":
            self.enum(node, path, typ)
        elif typ == "fixed":
            self.fixed(node, path, typ)
        elif typ in ("array", "map"):
            key = "items" if typ == "array" else "values"
            if key not in node:
                raise InvalidSchema(
                    f"{'an array' if key == 'items' else 'a map'} without '{key}' at {_at(path)}"
                )
            inner = self.type(node[key], f"{path}/{key}", depth + 1, False)
            if inner is not node[key]:
                node = {**node, key: inner}
        if node.get("logicalType") == "decimal" and not _decimal_ok(node):
            node = {k: v for k, v in node.items() if k != "logicalType"}
        return node

    def union(self, node, path, depth):
        seen: dict = {}
        branches = []
        for n, branch in enumerate(node):
            where = f"{path}/{n}"
            branches.append(self.type(branch, where, depth + 1, True))
            unnamed = _unnamed_kind(branch)
            if unnamed is not None:
                if unnamed in seen:
                    raise InvalidSchema(
                        f"the union at {_at(path)} has two {unnamed} branches "
                        f"({seen[unnamed]} and {n})"
                    )
                seen[unnamed] = n
        return node if all(a is b for a, b in zip(branches, node, strict=True)) else branches

    def record(self, node, path, depth, typ):
        self.named(node, path, typ)
        fields = node.get("fields", _MISSING)
        if type(fields) is not list:
            raise InvalidSchema(f"record {node['name']!r} needs a 'fields' array")
        names: dict = {}
        checked = [
            self.field(field, f"{path}/fields/{pos}", depth, names, pos)
            for pos, field in enumerate(fields)
        ]
        if not all(a is b for a, b in zip(checked, fields, strict=True)):
            node = {**node, "fields": checked}
        return node

    def enum(self, node, path, typ):
        self.named(node, path, typ)
        symbols = node.get("symbols", _MISSING)
        if type(symbols) is not list:
            raise InvalidSchema(f"enum {node['name']!r} needs a 'symbols' array")
        seen_symbols: set = set()
        for n, symbol in enumerate(symbols):
            if type(symbol) is not str or not _NAME.match(symbol):
                raise InvalidSchema(
                    f"enum symbol {symbol!r} at {path}/symbols/{n} is not a valid name "
                    "(a letter or _, then letters, digits or _)"
                )
            if symbol in seen_symbols:
                raise InvalidSchema(
                    f"enum symbol {symbol!r} appears twice in enum {node['name']!r}"
                )
            seen_symbols.add(symbol)
        default = node.get("default", _MISSING)
        if default is not _MISSING and default not in seen_symbols:
            raise InvalidSchema(
                f"the default {default!r} of enum {node['name']!r} is not one of its symbols"
            )

    def fixed(self, node, path, typ):
        self.named(node, path, typ)
        size = node.get("size", _MISSING)
        if type(size) is not int or size < 0:
            raise InvalidSchema(
                f"fixed {node['name']!r} needs a 'size', a non-negative integer, at {_at(path)}"
            )

    def named(self, node, path, typ):
        name = node.get("name", _MISSING)
        if type(name) is not str or not _valid_full_name(name):
            raise InvalidSchema(
                f"{typ} at {_at(path)} needs a 'name' of dot-separated parts, each a letter "
                f"or _ then letters, digits or _; got {_show_json(name)}"
            )
        if name in PRIMITIVES:
            raise InvalidSchema(f"a {typ} may not be named after a primitive type: {name!r}")
        namespace = node.get("namespace")
        if namespace is not None and (
            type(namespace) is not str or (namespace and not _valid_full_name(namespace))
        ):
            raise InvalidSchema(f"{typ} {name!r} has an invalid namespace {_show_json(namespace)}")
        self.aliases(node, f"{typ} {name!r}")

    def aliases(self, node, what):
        aliases = node.get("aliases", _MISSING)
        if aliases is _MISSING:
            return
        if type(aliases) is not list or not all(type(a) is str and a for a in aliases):
            raise InvalidSchema(f"the aliases of {what} must be an array of names")

    def field(self, field, path, depth, names, pos):
        if type(field) is not dict:
            raise InvalidSchema(f"a record field is an object, at {_at(path)}")
        name = field.get("name", _MISSING)
        if type(name) is not str or not _NAME.match(name):
            raise InvalidSchema(
                f"the field at {_at(path)} needs a 'name', a letter or _ then letters, digits "
                f"or _; got {_show_json(name)}"
            )
        if name in names:
            raise InvalidSchema(f"field {name!r} appears twice (fields {names[name]} and {pos})")
        names[name] = pos
        if "type" not in field:
            raise InvalidSchema(f"field {name!r} has no 'type'")
        order = field.get("order", _MISSING)
        if order is not _MISSING and (type(order) is not str or order.lower() not in _ORDERS):
            raise InvalidSchema(
                f"field {name!r} has order {_show_json(order)}; choose ascending, "
                "descending or ignore"
            )
        self.aliases(field, f"field {name!r}")
        inner = self.type(field["type"], f"{path}/type", depth + 1, False)
        return field if inner is field["type"] else {**field, "type": inner}


_KEYWORDS = frozenset({"record", "error", "enum", "fixed", "array", "map"})


def _decimal_ok(node) -> bool:
    """A decimal the reference honours: a positive precision (that a fixed's size can hold)
    and a scale from 0 to the precision, on bytes or fixed."""
    precision = node.get("precision")
    scale = node.get("scale", 0)
    if type(precision) is not int or precision <= 0 or type(scale) is not int:
        return False
    if not 0 <= scale <= precision:
        return False
    if node["type"] == "fixed":
        return precision <= int(math.floor(math.log10(2) * (8 * node["size"] - 1)))
    return node["type"] == "bytes"


def _unnamed_kind(branch):
    """The type a union branch claims when it is not a named type (unions hold one of each)."""
    if type(branch) is str:
        return branch if branch in PRIMITIVES else None
    if type(branch) is dict:
        typ = branch.get("type")
        if typ in PRIMITIVES or typ in ("array", "map"):
            return typ
    return None


def _valid_full_name(name: str) -> bool:
    return all(_NAME.match(part) for part in name.split("."))
