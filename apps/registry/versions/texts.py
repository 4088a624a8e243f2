"""The string the Schema Registry API answers for a version's schema."""

from __future__ import annotations

from apps.registry import avro, compatibility
from apps.registry.models import SchemaReference, SchemaVersion
from apps.registry.schema_text import schema_text


def _named(versions) -> dict:
    """The named types the referenced Avro versions define, by full name."""
    found: dict = {}
    for version in versions:
        found.update(avro.named_types(version.canonical))
    return found


def _document(version: SchemaVersion, references: list[SchemaReference]):
    """The version's schema as it was registered: stored bundled with what its references
    name (compatibility.bundle, avro.bundle), it is answered with the names again."""
    if not references:
        return version.schema
    if version.schema_type == "AVRO":
        return avro.unbundle(version.canonical, _named(r.referenced for r in references))
    return compatibility.unbundle(version.schema, [r.name for r in references])


def registry_text(version: SchemaVersion, references: list[SchemaReference]) -> str:
    """The schema's string as the reference registry answers it (apps.registry.schema_text),
    kept when the version was registered. A version kept without it is answered from its
    stored document: an Avro schema written as the reference writes it, a JSON Schema
    with its keys sorted.

    Branches on the schema type: for apps.registry.formats to answer."""
    if version.text:
        return version.text
    document = _document(version, references)
    if version.schema_type == "AVRO":
        return schema_text("AVRO", document, named=_named(r.referenced for r in references))
    return compatibility.canonical(document)
