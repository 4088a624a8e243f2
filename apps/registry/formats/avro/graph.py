"""The graph the checker walks, built once per parsed schema from fastavro's parsed form,
and the checks that need full names or types (a union's names, defaults)."""

from __future__ import annotations

from apps.registry.formats.avro.vocabulary import (
    _FLOAT_WORDS,
    _INT_RANGE,
    _LONG_RANGE,
    _MISSING,
    _NAMED,
    MAX_DEPTH,
    MAX_JSON_DEPTH,
    PRIMITIVES,
    _at,
    _show,
    _show_json,
)
from apps.registry.formats.errors import InvalidSchema, SchemaTooComplex


class _Node:
    """One type of a parsed schema. Named types are one node wherever they are used, so
    the graph of a recursive schema has cycles."""

    __slots__ = (
        "kind",
        "logical",
        "name",
        "short",
        "aliases",
        "fields",
        "by_name",
        "symbols",
        "symbol_set",
        "default",
        "size",
        "items",
        "values",
        "branches",
    )

    def __init__(self, kind: str, logical=None):
        self.kind = kind
        self.logical = logical
        self.name = self.short = None
        self.aliases = frozenset()
        self.fields: tuple = ()
        self.by_name: dict = {}
        self.symbols: tuple = ()
        self.symbol_set = frozenset()
        self.default = None
        self.size = None
        self.items = self.values = None
        self.branches: tuple = ()


class _Field:
    __slots__ = ("name", "aliases", "node", "has_default", "pos")

    def __init__(self, name, aliases, node, has_default, pos):
        self.name = name
        self.aliases = aliases
        self.node = node
        self.has_default = has_default
        self.pos = pos


_PRIMITIVE_NODES = {name: _Node(name) for name in PRIMITIVES}


class _Builder:
    """Turns fastavro's parsed schema into the graph the checker walks, and applies the
    rules that need full names (a union holds one type of each name) or types (defaults)."""

    def __init__(self, table, external, validate_defaults):
        self.table = table
        self.external = external
        self.validate_defaults = validate_defaults
        self.nodes: dict = {}
        self.external_used: set = set()
        self.defaults: list = []

    def node(self, obj, path, depth):
        if depth > MAX_DEPTH:
            raise SchemaTooComplex(f"the schema nests more than {MAX_DEPTH} types (at {path})")
        kind = type(obj)
        if kind is str:
            primitive = _PRIMITIVE_NODES.get(obj)
            if primitive is not None:
                return primitive
            return self.reference(obj, path, depth)
        if kind is list:
            node = _Node("union")
            node.branches = tuple(
                self.node(branch, f"{path}/{n}", depth + 1) for n, branch in enumerate(obj)
            )
            seen: dict = {}
            for n, branch in enumerate(node.branches):
                if branch.kind in _NAMED:
                    if branch.name in seen:
                        raise InvalidSchema(
                            f"the union at {_at(path)} has the type {branch.name} twice "
                            f"(branches {seen[branch.name]} and {n})"
                        )
                    seen[branch.name] = n
            return node
        typ = obj["type"]
        if typ in PRIMITIVES:
            logical = obj.get("logicalType")
            return _Node(typ, logical) if logical else _PRIMITIVE_NODES[typ]
        if typ in ("record", "error", "enum", "fixed"):
            return self.named(obj, path, depth)
        if typ == "array":
            node = _Node("array", obj.get("logicalType"))
            node.items = self.node(obj["items"], f"{path}/items", depth + 1)
            return node
        if typ == "map":
            node = _Node("map", obj.get("logicalType"))
            node.values = self.node(obj["values"], f"{path}/values", depth + 1)
            return node
        return self.reference(typ, path, depth)  # {"type": "some.Name"}

    def reference(self, name, path, depth):
        node = self.nodes.get(name)
        if node is not None:
            return node
        definition = self.table.get(name)
        if definition is None:
            raise InvalidSchema(f"unknown type {name!r} at {_at(path)}")
        if name in self.external:
            self.external_used.add(name)
            path = f"(the reference defining {name})"
        return self.named(definition, path, depth)

    def named(self, obj, path, depth):
        name = obj["name"]
        node = self.nodes.get(name)
        if node is not None:
            return node
        typ = "record" if obj["type"] == "error" else obj["type"]
        node = _Node(typ, obj.get("logicalType"))
        node.name = name
        namespace, _, node.short = name.rpartition(".")
        node.aliases = frozenset(
            alias if "." in alias or not namespace else f"{namespace}.{alias}"
            for alias in obj.get("aliases", ())
        )
        self.nodes[name] = node  # before the fields: they may refer to it
        if typ == "record":
            fields = []
            for pos, field in enumerate(obj["fields"]):
                where = f"{path}/fields/{pos}"
                child = self.node(field["type"], f"{where}/type", depth + 1)
                has_default = "default" in field
                if has_default and self.validate_defaults:
                    self.defaults.append((field["default"], child, f"{where}/default"))
                fields.append(
                    _Field(field["name"], tuple(field.get("aliases", ())), child, has_default, pos)
                )
            node.fields = tuple(fields)
            node.by_name = {field.name: field for field in fields}
        elif typ == "enum":
            node.symbols = tuple(obj["symbols"])
            node.symbol_set = frozenset(node.symbols)
            node.default = obj.get("default")
        else:
            node.size = obj["size"]
        return node

    def check_defaults(self):
        for value, node, path in self.defaults:
            if not _fits(value, node, 0):
                raise InvalidSchema(
                    f"the default {_show_json(value)} at {path} is not a valid {_show(node)} value"
                )


def _fits(value, node, depth) -> bool:
    """Whether a JSON default is a value of the type (the specification's JSON encoding)."""
    if depth > MAX_JSON_DEPTH:
        return False
    kind = node.kind
    vtype = type(value)
    if kind == "null":
        return value is None
    if kind == "boolean":
        return vtype is bool
    if kind == "int":
        return vtype is int and _INT_RANGE[0] <= value <= _INT_RANGE[1]
    if kind == "long":
        return vtype is int and _LONG_RANGE[0] <= value <= _LONG_RANGE[1]
    if kind in ("float", "double"):
        return vtype in (int, float) or (vtype is str and value in _FLOAT_WORDS)
    if kind in ("string", "bytes", "fixed"):
        return vtype is str
    if kind == "enum":
        return vtype is str and value in node.symbol_set
    if kind == "array":
        return vtype is list and all(_fits(item, node.items, depth + 1) for item in value)
    if kind == "map":
        return vtype is dict and all(_fits(item, node.values, depth + 1) for item in value.values())
    if kind == "union":
        return any(_fits(value, branch, depth + 1) for branch in node.branches)
    if vtype is not dict:  # a record
        return False
    for field in node.fields:
        item = value.get(field.name, _MISSING)
        if item is _MISSING:
            if not field.has_default:
                return False
        elif not _fits(item, field.node, depth + 1):
            return False
    return True


def _normalised(value):
    """fastavro's parsed form without its bookkeeping, aliases in full."""
    if type(value) is list:
        return [_normalised(item) for item in value]
    if type(value) is not dict:
        return value
    out = {}
    for key, item in value.items():
        if key in ("__fastavro_parsed", "__named_schemas"):
            continue
        if key == "fields" and type(item) is list:
            item = [_normalised_field(field) for field in item]
        elif key in ("type", "items", "values"):
            item = _normalised(item)
        out[key] = item
    if "aliases" in out and value.get("type") in ("record", "error", "enum", "fixed"):
        namespace = value["name"].rpartition(".")[0]
        out["aliases"] = sorted(
            a if "." in a or not namespace else f"{namespace}.{a}" for a in out["aliases"]
        )
    if len(out) == 1 and isinstance(out.get("type"), str) and out["type"] in PRIMITIVES:
        # `{"type": "int"}` is `"int"`, as Avro Java writes and compares it
        return out["type"]
    return out


def _normalised_field(field):
    out = dict(field)
    out["type"] = _normalised(field["type"])
    if "aliases" in out:
        out["aliases"] = sorted(out["aliases"])
    return out
