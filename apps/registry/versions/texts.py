"""The string the Schema Registry API answers for a version's schema, and whether a
parsed schema can be kept at all."""

from __future__ import annotations

import json

from apps.registry import formats
from apps.registry.models import SchemaReference, SchemaVersion


def _referenced(references: list[SchemaReference]) -> list[tuple[str, SchemaVersion]]:
    return [(reference.name, reference.referenced) for reference in references]


def _document(version: SchemaVersion, references: list[SchemaReference]):
    """The version's schema as it was registered: stored bundled with what its references
    name, it is answered with the names again."""
    if not references:
        return version.schema
    return formats.unbundled(version.schema_type, version, _referenced(references))


def registry_text(version: SchemaVersion, references: list[SchemaReference]) -> str:
    """The schema's string as the reference registry answers it (formats.schema_text),
    kept when the version was registered; a version kept without it is answered from its
    stored document."""
    if version.text:
        return version.text
    kind = version.schema_type
    named = formats.named_types(kind, [stored for _, stored in _referenced(references)])
    return formats.stored_text(kind, _document(version, references), named=named)


def storable(parsed: formats.Parsed) -> formats.Parsed:
    """The parsed schema, refused (formats.InvalidSchema, as any invalid schema is) when
    it holds a NUL character: PostgreSQL keeps none in text or JSON, so storing it would
    fail in the database. A body's own strings are refused by its serializer; a schema
    sent as text only shows its NULs (as \\u0000 escapes) once parsed."""
    if "\\u0000" in json.dumps(parsed.document):
        raise formats.InvalidSchema("the schema holds a NUL character")
    return parsed
