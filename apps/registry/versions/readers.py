"""Consumers' reader schemas judged: whether the schema a consumer reads with reads a
version, explained, so that a breaking version waits only for those it breaks."""

from __future__ import annotations

from apps.registry import formats
from apps.registry.models import ReaderSchema, Topic
from apps.registry.selectors import current_readers

# The verdict of a consumer that declared no reader schema: only its acknowledgement
# tells that its code reads a breaking version.
NO_READER = {
    "reads": False,
    "declared": False,
    "reason": "No reader schema declared: the consumer must acknowledge.",
}


def reader_verdict(reader: ReaderSchema | None, kind: str, writer, policy: str = "STRICT") -> dict:
    """Whether the reader schema reads data written with `writer` (a `kind` document),
    explained: the compatibility checker's BACKWARD check with the reader as the new
    schema and the writer as the old one ("can the new schema read the old one's data"
    is exactly "can this reader read this writer's data"), under the topic's policy."""
    if reader is None:
        return dict(NO_READER)
    declared = {
        "declared": True,
        "release": reader.release,
        "fingerprint": reader.fingerprint,
        "declared_at": reader.declared_at.isoformat(),
    }
    if reader.schema_type != kind:
        return {
            "reads": False,
            **declared,
            "reason": f"The reader schema is {reader.schema_type}; the version is {kind}.",
            "differences": [],
            "breaking": [],
        }
    parsed = formats.parse(kind, formats.stored_document(kind, reader.schema))
    verdict = formats.check(
        kind,
        parsed.checked,
        [formats.stored_document(kind, writer)],
        mode="BACKWARD",
        policy=policy,
    )
    return {
        "reads": verdict.compatible,
        **declared,
        "reason": "Its reader schema reads the version."
        if verdict.compatible
        else "Its reader schema cannot read the version.",
        "differences": [d.as_dict() for d in verdict.differences],
        "breaking": [d.as_dict() for d in verdict.breaking],
    }


def judge_readers(
    topic: Topic, role: str, kind: str, writer, consumers: list[str], policy: str
) -> dict[str, dict]:
    """Each consumer's verdict on the writer schema, by name, from the reader schema in
    force for it (the latest it declared for the topic and role)."""
    readers = current_readers(topic, role, consumers)
    return {name: reader_verdict(readers.get(name), kind, writer, policy) for name in consumers}
