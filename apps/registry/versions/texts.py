"""The string the Schema Registry API answers for a version's schema."""

from __future__ import annotations

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
