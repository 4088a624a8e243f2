"""The schema types the registry keeps, behind one shape: JSON Schema (`json_schema`),
Avro (`avro`) and Protobuf (`protobuf`). This module is the only place in the registry
that branches on the schema type.

`parse(kind, text_or_obj)` validates and answers a `Parsed`: the document to store, its
identity text and fingerprint, and what the type's `check()` takes. An Avro schema's
identity is its normal form (the Parsing Canonical Form's full names, and the defaults,
aliases and logical types that form drops, kept): the same schema re-sent with other
whitespace, attribute order or namespace spelling is the same schema, while a default
added is a new version, as a reader needs it. A Protobuf schema's identity is its
normalized text with the files it imports (`formats.protobuf`): the same .proto file sent
with other spacing, type names spelt otherwise, or as a serialized descriptor, is the
same schema. `schema_text()` is the string the Schema Registry API answers for a schema,
as the reference registry writes it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

from apps.registry.formats import avro, json_schema, protobuf
from apps.registry.formats.avro.text import avro_text
from apps.registry.formats.errors import InvalidSchema, SchemaTooComplex
from apps.registry.formats.json_schema.text import json_text
from apps.registry.formats.verdicts import MODES, POLICIES, Difference, Verdict

__all__ = [
    "MODES",
    "POLICIES",
    "TYPES",
    "Difference",
    "InvalidSchema",
    "LABELS",
    "Parsed",
    "SchemaTooComplex",
    "Verdict",
    "check",
    "named_types",
    "parse",
    "parse_stored",
    "parse_with_references",
    "schema_lines",
    "schema_text",
    "serialized",
    "stored_document",
    "stored_text",
    "unbundled",
]

TYPES = ("AVRO", "JSON", "PROTOBUF")
LABELS = {"JSON": "JSON Schema", "AVRO": "Avro", "PROTOBUF": "Protobuf"}


@dataclass(frozen=True)
class Parsed:
    kind: str
    document: object  # the decoded JSON to store
    canonical: str
    fingerprint: str
    checked: object  # what the type's check() takes
    # the schema as its sender wrote it, and how the Schema Registry API writes it (`text`)
    sent: object = field(default=None, repr=False, compare=False)
    named: dict | None = field(default=None, repr=False, compare=False)
    normalize: bool = field(default=False, repr=False, compare=False)

    @cached_property
    def text(self) -> str:
        """The reference registry's string of the schema (schema_text()): written only
        when asked for, as registering asks."""
        return schema_text(self.kind, self.sent, named=self.named, normalize=self.normalize)


def parse(kind: str, text_or_obj, *, sent=None, named=None, normalize: bool = False) -> Parsed:
    """`sent`: the schema as its sender wrote it, when `text_or_obj` is something else (the
    bundle of a schema with references); `named`, the named types an Avro schema's
    references define (full name: definition); `normalize`, the Schema Registry API's
    `normalize=true`. The last three only shape `Parsed.text`."""
    written = text_or_obj if sent is None else sent
    if kind == "AVRO":
        parsed = avro.parse_schema(text_or_obj)
        normal = parsed.normal_form()
        document = json.loads(text_or_obj) if isinstance(text_or_obj, str) else text_or_obj
        digest = hashlib.sha256(normal.encode("utf-8")).hexdigest()
        return Parsed(kind, document, normal, digest, parsed, written, named, normalize)
    if kind == "PROTOBUF":
        if not isinstance(text_or_obj, str):
            # a stored document's dependencies come from its references, never from a sender
            raise InvalidSchema("a Protobuf schema is the text of a .proto file")
        return _protobuf(protobuf.parse_schema(text_or_obj), normalize)
    if kind != "JSON":
        raise InvalidSchema(f"unknown schema type {kind!r}; supported: {', '.join(TYPES)}")
    schema = json_schema.parse_schema(text_or_obj)
    return Parsed(
        kind,
        schema,
        json_schema.canonical(schema),
        json_schema.fingerprint(schema),
        schema,
        written,
        None,
        normalize,
    )


def _protobuf(parsed: protobuf.ProtobufSchema, normalize: bool) -> Parsed:
    """A Protobuf schema's Parsed: its text is already written (the parsed schema is
    what `schema_text` writes it from)."""
    return Parsed(
        "PROTOBUF",
        parsed.document,
        parsed.canonical,
        parsed.fingerprint,
        parsed,
        parsed,
        None,
        normalize,
    )


def check(kind: str, new, previous: list, *, mode: str, policy: str):
    """The type's verdict on `new` against the published `previous` (oldest first)."""
    if kind == "PROTOBUF":
        return protobuf.check(new, previous, mode=mode, policy=policy)
    if kind == "AVRO":
        previous = [stored_document(kind, p) for p in previous]
        return avro.check(new, previous, mode=mode, policy=policy)
    return json_schema.check(new, previous, mode=mode, policy=policy)


def stored_document(kind: str, document):
    """A stored schema as its type's parser takes it: a stored Avro primitive
    ("string") is JSON text to the parser, not a document."""
    return json.dumps(document) if kind == "AVRO" and isinstance(document, str) else document


def parse_stored(kind: str, document) -> Parsed:
    """A stored schema (a version's or a reader's document) parsed: a stored Protobuf
    document carries the files it imports, which `parse` takes from no sender."""
    if kind == "PROTOBUF":
        return _protobuf(protobuf.parse_schema(document), False)
    return parse(kind, stored_document(kind, document))


def named_types(kind: str, referenced) -> dict | None:
    """The named types the referenced stored versions define (Avro), by full name; None
    for a type without named types."""
    if kind != "AVRO":
        return None
    found: dict = {}
    for stored in referenced:
        found.update(avro.named_types(stored.canonical))
    return found


def parse_with_references(kind: str, text: str, referenced, *, normalize: bool = False) -> Parsed:
    """The schema sent as `text`, parsed bundled with the stored versions its references
    name (`referenced`: (name, stored version) pairs): an Avro schema with the named
    types they define, a JSON Schema with their documents under its `$ref`s."""
    if kind == "AVRO":
        bundled = avro.bundle(text, [(name, stored.canonical) for name, stored in referenced])
        named = named_types(kind, [stored for _, stored in referenced])
        return parse(kind, bundled.normal_form(), sent=text, named=named, normalize=normalize)
    if kind == "PROTOBUF":
        files = protobuf.dependencies_of([(name, stored.schema) for name, stored in referenced])
        return _protobuf(protobuf.parse_schema(text, files), normalize)
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise InvalidSchema(f"not JSON: {exc}") from None
    bundled = json_schema.bundle(document, [(name, stored.schema) for name, stored in referenced])
    return parse(kind, bundled, sent=text, normalize=normalize)


def unbundled(kind: str, stored, referenced):
    """A stored version's schema as it was registered: kept bundled with what its
    references name (`referenced`: (name, stored version) pairs), answered with the
    names again."""
    if kind == "AVRO":
        named = named_types(kind, [version for _, version in referenced])
        return avro.unbundle(stored.canonical, named)
    if kind == "PROTOBUF":
        return protobuf.main_text(stored.schema)
    return json_schema.unbundle(stored.schema, [name for name, _ in referenced])


def stored_text(kind: str, document, *, named=None) -> str:
    """The string of a stored document kept without the text it was sent as: an Avro
    schema written as the reference writes it, a JSON Schema with its keys sorted."""
    if kind == "AVRO":
        return schema_text(kind, document, named=named)
    if kind == "PROTOBUF":
        return protobuf.main_text(document)
    return json_schema.canonical(document)


def schema_text(
    kind: str,
    sent,
    *,
    named: Mapping[str, object] | None = None,
    normalize: bool = False,
) -> str:
    """The canonical string of a schema of `kind` (one of TYPES) as sent (its text, or
    the decoded JSON), already known to be valid, as the reference registry stores it when
    the schema is registered and answers it by id, by subject-version and under
    `.../schema` (`ParsedSchema.canonicalString()`). `named`: for an Avro schema with
    references, the named types they define (full name: its definition, in normal form)."""
    if kind == "AVRO":
        return avro_text(sent, named=named, normalize=normalize)
    if kind == "PROTOBUF":
        return protobuf.parse_schema(sent).text(normalize=normalize)
    return json_text(sent, normalize=normalize)


def serialized(kind: str, document) -> str | None:
    """A stored Protobuf schema as the Schema Registry API's `format=serialized` answers
    it (the base64 of its FileDescriptorProto); None for a type without that format."""
    if kind != "PROTOBUF":
        return None
    return protobuf.parse_schema(document).serialized()


def schema_lines(kind: str, document) -> list[str]:
    """A stored schema as the console shows it, line by line: a Protobuf schema's text,
    a JSON document pretty-printed with its keys sorted."""
    if kind == "PROTOBUF":
        return protobuf.main_text(document).splitlines()
    return json.dumps(document, indent=2, sort_keys=True).splitlines()
