"""Consumers' reader schemas judged: whether the schema a consumer reads with reads a
version, explained. Every version of a topic with declared readers is judged (a level's
check compares versions with each other, never with what a consumer's code reads): a
breaking version waits only for those it breaks, and one the level passes still waits
for a consumer whose declared reader cannot read it."""

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
# The verdict, in its news, of a consumer that declared no reader on a version the topic's
# level passes: nothing checked what its code reads, and nothing is asked of it (`reads`
# is None, not False: no reader was found unable to read the version).
LEVEL_PASSES = {
    "reads": None,
    "declared": False,
    "reason": "No reader schema declared: the version passes the topic's compatibility "
    "level, and nothing is asked of the consumer.",
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
    parsed = formats.parse_stored(kind, reader.schema)
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
    topic: Topic,
    role: str,
    kind: str,
    writer,
    consumers: list[str],
    policy: str,
    *,
    declared_only: bool = False,
) -> dict[str, dict]:
    """Each consumer's verdict on the writer schema, by name, from the reader schema in
    force for it (the latest it declared for the topic and role). `declared_only`: only
    the consumers that declared a reader (a version the level passes asks nothing of the
    others)."""
    readers = current_readers(topic, role, consumers)
    named = [n for n in consumers if n in readers] if declared_only else consumers
    return {name: reader_verdict(readers.get(name), kind, writer, policy) for name in named}


def undeclared_verdict(verdict: dict) -> dict:
    """What a consumer that declared no reader hears as its verdict on a version."""
    return dict(LEVEL_PASSES if verdict.get("compatible") is True else NO_READER)
