"""An Avro schema's canonical string, as the reference registry answers it.

Avro Java's `Schema.toString(referencedSchemas, false)`: compact JSON in the order Avro's
own writer gives the attributes (`type`, `name`, `namespace`, `doc`, `fields` or `symbols`
or `size`, then the other attributes in the order sent, then `aliases`), each named type's
name written short with a `namespace` where it differs from the enclosing one, a named type
written out where it is first used and by name afterwards, the types the schema's
references define by name, and what Avro's parser drops (a `doc` of a primitive, a
`namespace` of an array, ...) gone. With `normalize=true` the schema is first rewritten by
`AvroSchemaUtils.toNormalizedString` (full names, attributes sorted, defaults converted to
their field's type), and that is written as above.

What Steward cannot give back exactly: a named type nested inside a referenced schema and
used directly is written by name, where the reference writes it out at its first use.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping

from apps.registry.formats.avro.vocabulary import _DEFINING, PRIMITIVES
from apps.registry.formats.jackson import jackson, java_float, json_string, sorted_keys

# the attributes Avro's parser reads itself: anything else on a schema object is a property
_SCHEMA_RESERVED = frozenset(
    {"doc", "fields", "items", "name", "namespace", "size", "symbols", "values", "type", "aliases"}
)
_ENUM_RESERVED = _SCHEMA_RESERVED | {"default"}
_FIELD_RESERVED = frozenset({"default", "doc", "name", "order", "type", "aliases"})
# Avro Java's logical types (1.11/1.12) by the type they annotate; decimal is checked apart
_LOGICAL = {
    "uuid": {"string"},
    "date": {"int"},
    "time-millis": {"int"},
    "time-micros": {"long"},
    "timestamp-millis": {"long"},
    "timestamp-micros": {"long"},
    "timestamp-nanos": {"long"},
    "local-timestamp-millis": {"long"},
    "local-timestamp-micros": {"long"},
    "local-timestamp-nanos": {"long"},
    "big-decimal": {"bytes"},
}


def avro_text(sent, *, named: Mapping[str, object] | None = None, normalize: bool = False) -> str:
    """The canonical string of an Avro schema as sent (its text, or the decoded JSON),
    already known to be valid. `named`: for a schema with references, the named types they
    define (full name: its definition, in normal form)."""
    document = json.loads(sent) if isinstance(sent, str) else sent
    named = dict(named or {})
    if normalize:
        document = _AvroNormalizer(named).type(document, None)
    return "".join(_AvroWriter(named).type(document, []))


def _split(full: str) -> tuple[str | None, str]:
    space, _, name = full.rpartition(".")
    return space or None, name


def _qualified(full: str, space: str | None) -> str:
    """Name.getQualified: the short name within its own namespace (or none), else full."""
    own, name = _split(full)
    return name if own is None or own == space else full


def _name_of(node: dict, space: str | None) -> tuple[str | None, str, str]:
    """(namespace, short name, full name) of a named type's definition met in `space`."""
    given = node["name"]
    if "." in given:
        own, short = _split(given)
    else:
        namespace = node.get("namespace")
        own = (namespace if isinstance(namespace, str) else space) or None
        short = given
    return own, short, f"{own}.{short}" if own else short


def _resolve(name: str, space: str | None, known) -> str:
    """Names.get: the name in the current namespace if such a type is known, else as it is."""
    full = name if "." in name or not space else f"{space}.{name}"
    return full if full in known else name


def _kind_of(node, space, definitions) -> str:
    """The Avro type a schema node stands for (a name resolved to its definition's)."""
    if isinstance(node, list):
        return "union"
    if isinstance(node, dict):
        kind = node.get("type")
        if kind in PRIMITIVES or kind in _DEFINING or kind in ("array", "map"):
            return "record" if kind == "error" else kind
        node = kind
    if isinstance(node, str):
        if node in PRIMITIVES:
            return node
        found = definitions.get(_resolve(node, space, definitions))
        return _kind_of(found, None, definitions) if found is not None else "unknown"
    return "unknown"


class _AvroWriter:
    """Avro Java's Schema.toJson over the schema as sent, in one walk: the order Avro's
    parser meets the types is the order its writer writes them."""

    def __init__(self, named: Mapping[str, object]):
        # the references' types, written by name; each type written out joins them
        self.known: set[str] = set(named)
        self.definitions: dict = dict(named)
        self.space: str | None = None

    def type(self, node, out: list) -> list:
        if isinstance(node, str):
            if node in PRIMITIVES:
                out.append(f'"{node}"')
            else:
                out.append(
                    json_string(_qualified(_resolve(node, self.space, self.known), self.space))
                )
        elif isinstance(node, list):
            out.append("[")
            for n, branch in enumerate(node):
                if n:
                    out.append(",")
                self.type(branch, out)
            out.append("]")
        else:
            kind = node.get("type")
            if kind in _DEFINING:
                self.named(node, kind, out)
            elif kind in ("array", "map"):
                key = "items" if kind == "array" else "values"
                out.append(f'{{"type":"{kind}","{key}":')
                self.type(node[key], out)
                self.props(node, _SCHEMA_RESERVED, out)
                out.append("}")
            elif kind in PRIMITIVES:
                start = len(out)
                out.append(f'{{"type":"{kind}"')
                self.props(node, _SCHEMA_RESERVED, out)
                if len(out) == start + 1:  # no property: just the name
                    out[start] = f'"{kind}"'
                else:
                    out.append("}")
            else:  # {"type": "com.acme.Address"}: the named type itself
                self.type(kind, out)
        return out

    def named(self, node: dict, kind: str, out: list) -> None:
        own, short, full = _name_of(node, self.space)
        if full in self.known:  # written already: by name
            out.append(json_string(_qualified(full, self.space)))
            return
        self.known.add(full)
        self.definitions[full] = node
        out.append(f'{{"type":"{kind}","name":{json_string(short)}')
        if own is not None:
            if own != self.space:
                out.append(f',"namespace":{json_string(own)}')
        elif self.space is not None:  # the null namespace inside another
            out.append(',"namespace":""')
        doc = node.get("doc")
        if isinstance(doc, str):
            out.append(f',"doc":{json_string(doc)}')
        if kind in ("record", "error"):
            saved, self.space = self.space, own
            out.append(',"fields":[')
            for n, field in enumerate(node["fields"]):
                if n:
                    out.append(",")
                self.field(field, out)
            out.append("]")
            self.space = saved
        elif kind == "enum":
            out.append(',"symbols":[' + ",".join(json_string(s) for s in node["symbols"]) + "]")
            if isinstance(node.get("default"), str):
                out.append(f',"default":{json_string(node["default"])}')
        else:
            out.append(f',"size":{node["size"]}')
        self.props(node, _ENUM_RESERVED if kind == "enum" else _SCHEMA_RESERVED, out)
        aliases = dict.fromkeys(
            alias if "." in alias or own is None else f"{own}.{alias}"
            for alias in node.get("aliases") or ()
        )
        if aliases:
            out.append(
                ',"aliases":[' + ",".join(json_string(_qualified(a, own)) for a in aliases) + "]"
            )
        out.append("}")

    def field(self, field: dict, out: list) -> None:
        out.append(f'{{"name":{json_string(field["name"])},"type":')
        self.type(field["type"], out)
        if isinstance(field.get("doc"), str):
            out.append(f',"doc":{json_string(field["doc"])}')
        if "default" in field:
            default = field["default"]
            if isinstance(default, str) and self.kind(field["type"]) in ("float", "double"):
                default = float(default)  # Avro's parser reads a textual number as a double
            out.append(f',"default":{jackson(default, doubles=True)}')
        order = field.get("order")
        if isinstance(order, str) and order.lower() != "ascending":
            out.append(f',"order":"{order.lower()}"')
        aliases = dict.fromkeys(field.get("aliases") or ())
        if aliases:
            out.append(',"aliases":[' + ",".join(json_string(a) for a in aliases) + "]")
        self.props(field, _FIELD_RESERVED, out)
        out.append("}")

    def kind(self, node) -> str:
        return _kind_of(node, self.space, self.definitions)

    @staticmethod
    def props(node: dict, reserved, out: list) -> None:
        for key, value in node.items():
            if key not in reserved:
                out.append(f",{json_string(key)}:{jackson(value, doubles=True)}")


def _decimal_type(node: dict, kind: str) -> bool:
    """A decimal Avro Java honours (LogicalTypes.Decimal.validate)."""
    precision, scale = node.get("precision"), node.get("scale", 0)
    if type(precision) is not int or type(scale) is not int or precision <= 0:
        return False
    if not 0 <= scale <= precision:
        return False
    if kind == "fixed":
        size = node.get("size")
        return type(size) is int and precision <= math.floor(math.log10(2) * (8 * size - 1))
    return kind == "bytes"


def _logical(node: dict, kind: str) -> dict | None:
    """The logical type's own attributes, as toNormalizedString writes them first, when
    Avro Java recognises it (an invalid one is an ordinary property)."""
    name = node.get("logicalType")
    if name == "decimal" and _decimal_type(node, kind):
        found = {"logicalType": "decimal", "precision": node["precision"]}
        if node.get("scale", 0):
            found["scale"] = node["scale"]
        return found
    if isinstance(name, str) and kind in _LOGICAL.get(name, ()):
        return {"logicalType": name}
    return None


class _AvroNormalizer:
    """AvroSchemaUtils.toNormalizedString, as a document: every name in full, a named type
    written out once (the references' by name), attributes sorted, field defaults as the
    field's type reads them. Avro's writer then writes it as it writes any schema."""

    def __init__(self, named: Mapping[str, object]):
        self.written: set[str] = set(named)
        self.definitions: dict = dict(named)

    def type(self, node, space):
        if isinstance(node, str):
            return node if node in PRIMITIVES else _resolve(node, space, self.definitions)
        if isinstance(node, list):
            return [self.type(branch, space) for branch in node]
        kind = node.get("type")
        if kind in _DEFINING:
            return self.named(node, kind, space)
        if kind in ("array", "map"):
            key = "items" if kind == "array" else "values"
            return self.props({"type": kind, key: self.type(node[key], space)}, node)
        if kind in PRIMITIVES:
            logical = _logical(node, kind)
            if logical is None and not any(k not in _SCHEMA_RESERVED for k in node):
                return kind
            return self.props({"type": kind, **(logical or {})}, node)
        return self.type(kind, space)

    def named(self, node: dict, kind: str, space):
        own, _, full = _name_of(node, space)
        if full in self.written:
            return full
        self.written.add(full)
        self.definitions[full] = node
        out = {"name": full, "type": "record" if kind == "error" else kind}
        if kind == "enum":
            out["symbols"] = list(node["symbols"])
        elif kind == "fixed":
            out["size"] = node["size"]
            out.update(_logical(node, kind) or {})
        else:
            out["fields"] = [self.field(field, own) for field in node["fields"]]
        doc = node.get("doc")
        if isinstance(doc, str) and doc:
            out["doc"] = doc
        aliases = sorted(
            {
                alias if "." in alias or own is None else f"{own}.{alias}"
                for alias in node.get("aliases") or ()
            }
        )
        if aliases:
            out["aliases"] = aliases
        if kind == "enum" and isinstance(node.get("default"), str):
            out["default"] = node["default"]
        return self.props(out, node, _ENUM_RESERVED if kind == "enum" else _SCHEMA_RESERVED)

    def field(self, field: dict, space):
        out = {"name": field["name"], "type": self.type(field["type"], space)}
        order = field.get("order")
        out["order"] = order.upper() if isinstance(order, str) else "ASCENDING"
        if isinstance(field.get("doc"), str):
            out["doc"] = field["doc"]
        aliases = sorted(set(field.get("aliases") or ()))
        if aliases:
            out["aliases"] = aliases
        if "default" in field:
            value = self.default(field["default"], field["type"], space)
            if value is not _NONE:
                out["default"] = value
        return self.props(out, field, _FIELD_RESERVED)

    def default(self, value, node, space):
        """JacksonUtils.toObject of the default as the field's type reads it (a union: its
        first branch), then back to JSON with object keys sorted; _NONE where it reads
        none."""
        target = self._target(node, space)
        if isinstance(target, list):
            return self.default(value, target[0] if target else None, space)
        kind = None if target is None else _kind_of(target, space, self.definitions)
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            if kind in (None, "int", "long"):
                return value
            if kind == "float":
                return java_float(value)
            return float(value) if kind == "double" else _NONE
        if isinstance(value, float):
            if kind in (None, "double"):
                return value
            return java_float(value) if kind == "float" else _NONE
        if isinstance(value, str):
            return value if kind in (None, "string", "enum", "bytes", "fixed") else _NONE
        if isinstance(value, list):
            items = target.get("items") if isinstance(target, dict) else None
            return [_or_null(self.default(item, items, space)) for item in value]
        found = {}
        for key in sorted(value):
            inner = None
            if kind == "map":
                inner = target.get("values")
            elif kind == "record":
                inner = next((f["type"] for f in target["fields"] if f["name"] == key), None)
            found[key] = _or_null(self.default(value[key], inner, space))
        return found

    def _target(self, node, space):
        """The definition a type node stands for (a name resolved), or the node itself."""
        if isinstance(node, str) and node not in PRIMITIVES:
            return self.definitions.get(_resolve(node, space, self.definitions), node)
        if isinstance(node, dict) and isinstance(node.get("type"), str):
            kind = node["type"]
            if kind not in PRIMITIVES and kind not in _DEFINING and kind not in ("array", "map"):
                return self._target(kind, space)
        return node

    @staticmethod
    def props(out: dict, node: dict, reserved=_SCHEMA_RESERVED) -> dict:
        """The node's properties after `out`'s own attributes, sorted, each as
        JacksonUtils.toObject and back makes it (nested objects' keys sorted too)."""
        for key in sorted(k for k in node if k not in reserved):
            out.setdefault(key, sorted_keys(node[key]))
        return out


_NONE = object()


def _or_null(value):
    return None if value is _NONE else value
