"""Avro schemas: parsed, fingerprinted, and judged by the specification's schema resolution.

The JSON Schema checker (`formats.json_schema`) has the same public shape, so that the registry
can dispatch on the schema type: `parse_schema()`, `canonical()`, `fingerprint()`, `check()`
returning a `Verdict` of `Difference`s, `MODES`, `InvalidSchema`, `SchemaTooComplex`. The
user-facing rules are `docs/registry-avro.md`; this module is their executable form.

- Parsing: `fastavro` parses and resolves the names; Steward adds the checks the reference
  registry's Java parser makes and fastavro leaves out (names, duplicate fields and union
  branches, nested unions, fixed sizes, field orders, defaults that fit their type), and
  bounds the nesting. A schema may use named types that other schemas define (the
  registry's `references`) through the `named` argument; nothing is ever fetched.
- Identity: `canonical()` is the specification's Parsing Canonical Form (fastavro's), and
  `fingerprint()` its SHA-256: the same schema re-sent with other whitespace, attribute
  order, namespaces spelt otherwise, docs, aliases or defaults is the same schema.
  `rabin_fingerprint()` is the specification's CRC-64-AVRO of the same form. Because the
  canonical form drops defaults, aliases and logical types, `normal_form()` keeps them
  (and docs and custom properties): two schemas with the same normal form are the same
  document up to formatting, which is what "register the same schema again" should mean.
- Compatibility: `can_read(reader, writer)` lists every reason data written with `writer`
  cannot be read with `reader`, each with a kind named after Apache Avro's
  `SchemaCompatibility.SchemaIncompatibilityType` (the reference registry's Avro checker),
  a JSON-pointer path into the reader schema and one sentence. The rules are written
  here, not delegated to fastavro. BACKWARD is can_read(new, old), FORWARD
  can_read(old, new), FULL both; the transitive modes against every earlier version.

The checker walks a compact graph built once per parsed schema (parsed schemas are cached
by their text), memoises every (reader record, writer record) pair so recursive types
terminate and shared types are compared once, and spends from a bounded budget: too deep a
walk or too many pairs raise SchemaTooComplex instead of running away.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping

import fastavro.schema as _fastavro

from apps.registry.formats import loader
from apps.registry.formats.avro.graph import _Builder, _normalised
from apps.registry.formats.avro.references import _definitions, _Inliner
from apps.registry.formats.avro.resolution import _can_read
from apps.registry.formats.avro.shape import _Shape
from apps.registry.formats.avro.vocabulary import (
    _DEFINING,
    _NAMED,
    KINDS,
    MAX_DEPTH,
    MAX_JSON_DEPTH,
    MAX_JSON_NODES,
    MAX_REPORTED,
    MAX_WALK_DEPTH,
    MAX_WORK,
    PRIMITIVES,
)
from apps.registry.formats.errors import InvalidSchema, SchemaTooComplex
from apps.registry.formats.loader import json_type_name
from apps.registry.formats.verdicts import MODES, POLICIES, Difference, Verdict, choose

__all__ = [
    "KINDS",
    "MAX_DEPTH",
    "MAX_JSON_DEPTH",
    "MAX_JSON_NODES",
    "MAX_REPORTED",
    "MAX_WALK_DEPTH",
    "MAX_WORK",
    "MODES",
    "POLICIES",
    "PRIMITIVES",
    "AvroSchema",
    "CACHE_SIZE",
    "Difference",
    "InvalidSchema",
    "SchemaTooComplex",
    "Verdict",
    "bundle",
    "can_read",
    "canonical",
    "check",
    "fingerprint",
    "named_types",
    "normal_form",
    "parse_schema",
    "rabin_fingerprint",
    "unbundle",
]

CACHE_SIZE = 2_048  # parsed schemas kept by text


class AvroSchema:
    """A parsed, validated Avro schema. Treat it as immutable: it is shared through the cache.

    `parsed` is fastavro's parsed form (for fastavro's readers and writers), `canonical`
    the Parsing Canonical Form, `fingerprint` its SHA-256 (hex), `name` the full name of
    the top-level named type (None for a primitive, an array, a map or a union), `names`
    the named types the schema defines and `external` those of `named` it reaches
    (directly or through another referenced type), sorted.
    """

    __slots__ = (
        "parsed",
        "canonical",
        "fingerprint",
        "name",
        "names",
        "external",
        "_root",
        "_normal",
        "_rabin",
    )

    def __init__(self, parsed, canonical_form, root, names, external):
        self.parsed = parsed
        self.canonical = canonical_form
        self.fingerprint = hashlib.sha256(canonical_form.encode("utf-8")).hexdigest()
        self.name = root.name if root.kind in _NAMED else None
        self.names = names
        self.external = external
        self._root = root
        self._normal = None
        self._rabin = None

    def __repr__(self) -> str:
        return f"<AvroSchema {self.name or self._root.kind} {self.fingerprint[:12]}>"

    def __eq__(self, other):
        if not isinstance(other, AvroSchema):
            return NotImplemented
        return self.normal_form() == other.normal_form()

    def __hash__(self):
        return hash(self.fingerprint)

    def normal_form(self) -> str:
        if self._normal is None:
            self._normal = json.dumps(
                _normalised(self.parsed),
                sort_keys=True,
                separators=(",", ":"),
                ensure_ascii=False,
            )
        return self._normal

    def rabin_fingerprint(self) -> str:
        if self._rabin is None:
            self._rabin = _fastavro.fingerprint(self.canonical, "CRC-64-AVRO")
        return self._rabin


_CACHE: dict = {}


def parse_schema(
    text_or_obj, named=None, *, validate_defaults: bool = True, _agreeing: bool = False
) -> AvroSchema:
    """Parse (if text) and validate an Avro schema; raise InvalidSchema with a reason.

    `text_or_obj` is the schema's JSON text (`'"string"'`, `'{"type": "record", ...}'`,
    `'["null", "int"]'`) or the decoded JSON (a dict or a list), or an AvroSchema (returned
    as it is). `named` gives the schemas whose named types this one may use by name, the
    registry's resolved references: a mapping of reference name to schema (text, JSON or
    AvroSchema), or an iterable of schemas, in the order to parse them (a later one may
    use an earlier one's types); none of them may redefine a name another defines.

    `validate_defaults=False` accepts field defaults that do not fit their type, as the
    reference registry does for the versions it already stores (it checks defaults only
    of schemas being registered).
    """
    if isinstance(text_or_obj, AvroSchema):
        return text_or_obj
    references = _references(named)  # once: `named` may be an iterator
    key = _cache_key(text_or_obj, references, (validate_defaults, _agreeing))
    if key is not None:
        hit = _CACHE.get(key)
        if hit is not None:
            return hit
    schema = _parse_uncached(text_or_obj, references, validate_defaults, _agreeing)
    if key is not None:
        while len(_CACHE) >= CACHE_SIZE:  # the oldest first; another thread may be at it too
            try:
                _CACHE.pop(next(iter(_CACHE)), None)
            except (StopIteration, RuntimeError):
                break
        _CACHE[key] = schema
    return schema


def _parse_uncached(text_or_obj, references, validate_defaults, agreeing=False) -> AvroSchema:
    """Parse without the cache; `references` is a list of (label, schema). `agreeing`: the
    schema is a reference, which may define again, alike, a type an earlier one defines
    (stored versions are bundled: two may carry a type both use)."""
    value = _decoded(text_or_obj)
    loader.bound(
        value,
        max_depth=MAX_JSON_DEPTH,
        max_nodes=MAX_JSON_NODES,
        values_nest=True,
        too_deep=f"the schema nests more than {MAX_JSON_DEPTH} JSON levels",
        bad_key="an object key is not a string",
    )
    table: dict = {}
    external: dict = {}
    earlier: dict = {}
    for label, reference in references:
        try:
            ref = parse_schema(
                reference,
                dict(earlier) or None,
                validate_defaults=validate_defaults,
                _agreeing=True,
            )
        except InvalidSchema as exc:
            raise type(exc)(f"reference {label!r}: {exc.reason}") from None
        defined: dict = {}
        _merge_named(defined, ref.parsed)
        for name in ref.names:
            # two references may each carry a type they both use (stored bundled), alike
            if name in external and _normalised(defined[name]) != _normalised(table[name]):
                raise InvalidSchema(
                    f"reference {label!r} redefines the named type {name}, "
                    f"which reference {external[name]!r} defines"
                )
        table.update(defined)
        external.update(dict.fromkeys(ref.names, label))
        earlier[label] = reference
    return _parse(value, table, external, validate_defaults, agreeing)


def canonical(schema) -> str:
    """The Parsing Canonical Form of the Avro specification (names in full, only the
    attributes that shape the binary encoding, no whitespace)."""
    return parse_schema(schema).canonical


def fingerprint(schema) -> str:
    """Hex SHA-256 of the Parsing Canonical Form."""
    return parse_schema(schema).fingerprint


def rabin_fingerprint(schema) -> str:
    """The specification's 64-bit Rabin fingerprint (CRC-64-AVRO) of the Parsing Canonical
    Form: 16 hex digits of its little-endian bytes, as Apache Avro's Java library and the
    single-object encoding give them ('"int"' is 8f5c393f1ad57572)."""
    return parse_schema(schema).rabin_fingerprint()


def normal_form(schema) -> str:
    """The schema as compact JSON with sorted keys, every name in full and every attribute
    kept (defaults, aliases, logical types, docs, custom properties): equal normal forms,
    the same schema up to formatting."""
    return parse_schema(schema).normal_form()


def can_read(reader, writer) -> list[Difference]:
    """Every reason data written with `writer` cannot be read with `reader`; [] when it can.

    Each Difference has a kind (one of KINDS), a JSON-pointer path into the reader schema
    ("/fields/2/type"; "/" is the whole schema; a path continues through a named type
    where it is used, as if it were written out there) and one sentence.
    """
    return _can_read(parse_schema(reader), parse_schema(writer), ("reader", "writer"))


def check(new, previous, *, mode: str = "BACKWARD", policy: str = "STRICT") -> Verdict:
    """Judge `new` against the published schemas `previous` (oldest first).

    Plain modes compare with previous[-1] only, *_TRANSITIVE modes with every earlier
    version, NONE with nothing. BACKWARD checks that the new schema reads data written with
    the old one, FORWARD the reverse, FULL both. Avro has one set of rules: the policy is
    accepted (so both schema types are called alike) and recorded, and changes nothing.
    Every difference found is breaking.
    """
    mode = choose(mode, MODES, "mode")
    policy = choose(policy, POLICIES, "policy")
    if isinstance(previous, str | bytes | bytearray | dict | AvroSchema):
        raise TypeError("previous is a list of schemas, oldest first")
    previous = list(previous or ())
    if mode == "NONE" or not previous:
        return Verdict(True, mode, policy)
    new = parse_schema(new)
    olds = previous if mode.endswith("_TRANSITIVE") else previous[-1:]
    backward = not mode.startswith("FORWARD")
    forward = not mode.startswith("BACKWARD")
    found: dict[tuple[str, str, str], Difference] = {}
    for old in reversed(olds):  # the latest version's explanation first
        old = parse_schema(old)
        if old.canonical == new.canonical and not (old.external or new.external):
            continue  # the same types and names: each reads the other
        if backward:
            for d in _can_read(new, old, ("new", "old")):
                found.setdefault((d.kind, d.path, d.message), d)
        if forward:
            for d in _can_read(old, new, ("old", "new")):
                found.setdefault((d.kind, d.path, d.message), d)
    differences = tuple(found.values())
    return Verdict(not differences, mode, policy, differences, differences)


# --------------------------------------------------------------------------- parsing


def _cache_key(value, references, validate_defaults):
    if isinstance(value, bytes | bytearray):
        value = bytes(value)
    elif not isinstance(value, str):
        return None  # decoded JSON is mutable: parse it each time
    refs = []
    for label, reference in references:
        if isinstance(reference, AvroSchema):
            refs.append((label, "avro", reference.normal_form()))
        elif isinstance(reference, str | bytes):
            refs.append((label, "text", reference))
        else:
            return None
    return (value, tuple(refs), validate_defaults)


def _references(named) -> list:
    if named is None:
        return []
    if isinstance(named, Mapping):
        return [(str(label), schema) for label, schema in named.items()]
    if isinstance(named, str | bytes | bytearray | dict | AvroSchema) or not isinstance(
        named, Iterable
    ):
        raise InvalidSchema("references are a mapping of name to schema, or a list of schemas")
    return [(f"#{n}", schema) for n, schema in enumerate(named)]


def _decoded(value):
    if isinstance(value, str | bytes | bytearray):
        value = loader.decode(value)
        if not isinstance(value, str | dict | list):
            raise InvalidSchema(
                f"an Avro schema is a type name, an object or an array (a union), "
                f"not {json_type_name(value)}"
            )
        return value
    if isinstance(value, dict | list):
        return value
    raise InvalidSchema(
        f"an Avro schema is JSON text, a dict or a list, not {type(value).__name__}"
    )


def _parse(value, table, external, validate_defaults, agreeing=False) -> AvroSchema:
    value = _Shape().type(value, "", 1, False)
    before = dict(table)
    try:
        # defaults are checked below, by the reference's rules and with the field's path
        parsed = _fastavro.parse_schema(value, table, _ignore_default_error=True)
    except RecursionError:
        raise SchemaTooComplex("the schema nests too deeply to parse") from None
    except _fastavro.UnknownType as exc:
        raise InvalidSchema(
            f"unknown type {exc.name!r}: neither a primitive type nor a named type defined "
            f"before its use, in the schema or in its references ({_undefined(value, exc.name)})"
        ) from None
    except _fastavro.SchemaParseException as exc:
        raise InvalidSchema(f"not a valid Avro schema: {exc}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise InvalidSchema(f"not a valid Avro schema: {type(exc).__name__} {exc}") from None
    for name, definition in before.items():
        mine = table.get(name)
        if mine is not definition and not (
            agreeing and _normalised(mine) == _normalised(definition)
        ):
            raise InvalidSchema(
                f"the schema redefines the named type {name}, which reference "
                f"{external.get(name, '?')!r} defines"
            )
    builder = _Builder(table, external, validate_defaults)
    root = builder.node(parsed, "", 1)
    builder.check_defaults()
    try:
        form = _canonical_form(parsed)
    except RecursionError:
        raise SchemaTooComplex("the schema nests too deeply to canonicalise") from None
    names = tuple(name for name in builder.nodes if name not in external)
    used = tuple(sorted(builder.external_used))
    return AvroSchema(parsed, form, root, names, used)


def _undefined(value, name) -> str:
    """Avro Java's words for an undefined name, which the reference registry's answer
    carries and tools match: a field's type names the field."""
    quoted = json.dumps(name)
    pending = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, list):
            pending.extend(reversed(node))
        elif isinstance(node, dict):
            for item in node.get("fields") or ():
                if isinstance(item, dict) and item.get("type") == name:
                    return (
                        f'{quoted} is not a defined name. The type of the "{item.get("name")}" '
                        'field must be a defined name or a {"type": ...} expression.'
                    )
            fields = [item for item in node.get("fields") or () if isinstance(item, dict)]
            pending.extend(item.get("type") for item in reversed(fields))
            pending.extend(node[key] for key in ("type", "items", "values") if key in node)
    return f"Undefined name: {quoted}"


def _canonical_form(parsed) -> str:
    """fastavro's Parsing Canonical Form; a union's or a bare name's piece by piece, since
    fastavro parses it again without the named types a reference defines."""
    if isinstance(parsed, str) and parsed not in PRIMITIVES:
        return json.dumps(parsed)
    if isinstance(parsed, list):
        return "[" + ",".join(_canonical_form(branch) for branch in parsed) + "]"
    return _fastavro.to_parsing_canonical_form(parsed)


def _merge_named(table: dict, parsed) -> None:
    """Add the named types of a parsed reference to `table`: fastavro lists them with a
    record (`__named_schemas`), not with an enum or a fixed parsed on its own."""
    for item in parsed if isinstance(parsed, list) else [parsed]:
        if not isinstance(item, dict):
            continue
        found = item.get("__named_schemas")
        if found:
            table.update(found)
        elif item.get("type") in _DEFINING and isinstance(item.get("name"), str):
            table[item["name"]] = item


def bundle(text_or_obj, references: list[tuple[str, object]]) -> AvroSchema:
    """The schema, using the named types its references define, made to stand alone.

    `references` is (name, referenced schema) in the registration's order, each a
    self-contained schema (text, JSON or AvroSchema: a stored version is already bundled).
    The schema is first parsed with the references' types known (fastavro's named schemas),
    which refuses an unknown or redefined name; then each referenced type it uses is written
    out where it is first used, and the result parsed again on its own. Data is encoded
    the same either way; the bundle is what is stored, compared and fingerprinted, so a
    change inside a referenced type shows through the schema that uses it.
    """
    if not references:
        return parse_schema(text_or_obj)
    named = {name: parse_schema(schema) for name, schema in references}
    parse_schema(text_or_obj, named)
    definitions: dict = {}
    for schema in named.values():
        _definitions(json.loads(schema.normal_form()), definitions)
    inlined = _Inliner(definitions).type(_decoded(text_or_obj), "")
    return parse_schema(inlined)


def named_types(schema) -> dict:
    """The named types a schema defines, by full name, each as its normal form writes it."""
    found: dict = {}
    _definitions(json.loads(parse_schema(schema).normal_form()), found)
    return found


def unbundle(schema, names) -> object:
    """The bundled schema's JSON (normal form) with the named types `names` (those its
    references define) written as their names again, as it was registered to use them."""
    wanted = set(names)

    def plain(value):
        if isinstance(value, list):
            return [plain(branch) for branch in value]
        if not isinstance(value, dict):
            return value
        kind = value.get("type")
        if kind in _DEFINING and value.get("name") in wanted:
            return value["name"]
        if kind in ("record", "error"):
            return {
                **value,
                "fields": [
                    {**item, "type": plain(item.get("type"))} for item in value.get("fields") or ()
                ],
            }
        if kind == "array":
            return {**value, "items": plain(value.get("items"))}
        if kind == "map":
            return {**value, "values": plain(value.get("values"))}
        if isinstance(kind, dict | list):
            return {**value, "type": plain(kind)}
        return value

    return plain(json.loads(parse_schema(schema).normal_form()))
