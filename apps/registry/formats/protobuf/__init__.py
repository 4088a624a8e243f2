"""Protobuf schemas: `.proto` files (proto2 and proto3) parsed, written as the reference
registry writes them, and judged by its compatibility rules.

The same public shape as `formats.avro` and `formats.json_schema`: `parse_schema()`,
`check()` answering a `Verdict` of `Difference`s. The user-facing rules are
`docs/registry-protobuf.md`; `rules` is their executable form.

- Parsing (`descriptors`): the text through `proto-schema-parser`, or the base64 of a
  serialized FileDescriptorProto (what confluent-kafka's serializer registers), built in
  a descriptor pool with the files it imports: its references, by the names it imports
  them as, and protobuf's well-known types. Nothing is fetched.
- Stored document: the schema's canonical text, or, when it imports references,
  `{"schema": text, "dependencies": {import name: text}}` with every file it reaches, so
  that a stored version is judged again without reading its references' rows.
- Identity: the normalized text (types named in full, imports and options sorted,
  fields by number) and the dependencies': the same schema sent as text or as a
  descriptor, spaced or ordered otherwise, is the same schema.
"""

from __future__ import annotations

import base64
import hashlib
import json
from functools import lru_cache

from apps.registry.formats.errors import InvalidSchema
from apps.registry.formats.protobuf.descriptors import MAIN, parse_file, resolved
from apps.registry.formats.protobuf.rules import BREAKING, KINDS, Types, differences
from apps.registry.formats.protobuf.text import known_extensions, proto_text
from apps.registry.formats.verdicts import MODES, POLICIES, Difference, Verdict, choose

__all__ = [
    "KINDS",
    "ProtobufSchema",
    "check",
    "dependencies_of",
    "main_text",
    "parse_schema",
]

CACHE_SIZE = 2_048  # parsed schemas kept by document


class ProtobufSchema:
    """A parsed, validated .proto file with what it imports. Treat it as immutable: it
    is shared through the cache."""

    __slots__ = ("canonical", "normalized", "dependencies", "types", "_resolved", "fingerprint")

    def __init__(self, text: str, dependencies: dict[str, str]):
        parsed = {name: parse_file(dep) for name, dep in dependencies.items()}
        deps = {name: proto for name, (proto, _) in parsed.items()}
        for name, proto in deps.items():
            proto.name = name
        main, layout = parse_file(text)
        files = resolved(main, deps)
        self._resolved = files[MAIN]
        self.canonical = proto_text(main, layout=layout)
        known = known_extensions(files.values())
        self.normalized = proto_text(self._resolved, normalized=True, extensions=known)
        reached = _reached(main, deps)
        self.dependencies = {
            name: proto_text(deps[name], layout=parsed[name][1]) for name in sorted(reached)
        }
        self.types = Types(files, self._resolved)
        identity = json.dumps([self.normalized, self.dependencies], separators=(",", ":"))
        self.fingerprint = hashlib.sha256(identity.encode("utf-8")).hexdigest()

    def __repr__(self) -> str:
        return f"<ProtobufSchema {self.fingerprint[:12]}>"

    @property
    def document(self):
        if not self.dependencies:
            return self.canonical
        return {"schema": self.canonical, "dependencies": dict(self.dependencies)}

    def text(self, *, normalize: bool = False) -> str:
        return self.normalized if normalize else self.canonical

    def serialized(self) -> str:
        """The base64 of the schema's FileDescriptorProto, its types named in full: the
        Schema Registry API's `format=serialized`, which confluent-kafka's deserializer
        asks for."""
        return base64.standard_b64encode(self._resolved.SerializeToString()).decode("ascii")


def _reached(main, deps) -> set[str]:
    """The imported files the schema reaches, through each other too (well-known types
    aside: they are not stored)."""
    found: set[str] = set()
    stack = list(main.dependency)
    while stack:
        name = stack.pop()
        if name in deps and name not in found:
            found.add(name)
            stack.extend(deps[name].dependency)
    return found


def parse_schema(value, dependencies: dict[str, str] | None = None) -> ProtobufSchema:
    """A schema from its text (or a stored document, which carries its dependencies);
    `dependencies`: the text of each file it imports, by import name."""
    if isinstance(value, ProtobufSchema):
        return value
    if isinstance(value, dict) and value.keys() == {"schema", "dependencies"}:
        text, stored = value["schema"], value["dependencies"]
        if not isinstance(text, str) or not isinstance(stored, dict):
            raise InvalidSchema("a stored Protobuf schema is {schema, dependencies}")
        dependencies = {**stored, **(dependencies or {})}
        value = text
    if not isinstance(value, str):
        raise InvalidSchema("a Protobuf schema is the text of a .proto file")
    return _parsed(value, tuple(sorted((dependencies or {}).items())))


@lru_cache(maxsize=CACHE_SIZE)
def _parsed(text: str, dependencies: tuple) -> ProtobufSchema:
    return ProtobufSchema(text, dict(dependencies))


def dependencies_of(referenced) -> dict[str, str]:
    """The files a schema's references give it (`referenced`: (import name, stored
    document) pairs): each referenced schema's text by the name it is imported as, and
    the files it imports itself."""
    found: dict[str, str] = {}
    for name, document in referenced:
        if isinstance(document, dict):
            found.update(document.get("dependencies") or {})
            found[name] = document.get("schema", "")
        else:
            found[name] = document
    return found


def main_text(document) -> str:
    """The schema's own text from a stored document."""
    return document["schema"] if isinstance(document, dict) else document


def check(new, previous, *, mode: str = "BACKWARD", policy: str = "STRICT") -> Verdict:
    """Judge `new` against the published schemas `previous` (oldest first): plain modes
    against the latest only, *_TRANSITIVE against each, NONE against none; BACKWARD as
    the reference compares (old, new), FORWARD (new, old), FULL both. The reference has
    one set of Protobuf rules: the policy is recorded and changes nothing."""
    mode = choose(mode, MODES, "mode")
    policy = choose(policy, POLICIES, "policy")
    previous = list(previous or ())
    if mode == "NONE" or not previous:
        return Verdict(True, mode, policy)
    new = parse_schema(new)
    olds = previous if mode.endswith("_TRANSITIVE") else previous[-1:]
    found: dict[tuple[str, str, str], Difference] = {}
    for old in reversed(olds):  # the latest version's explanation first
        old = parse_schema(old)
        if old.fingerprint == new.fingerprint:
            continue
        pairs = []
        if not mode.startswith("FORWARD"):
            pairs.append((old, new, "old", "new"))
        if not mode.startswith("BACKWARD"):
            pairs.append((new, old, "new", "old"))
        for original, update, a, b in pairs:
            for d in differences(original.types, update.types):
                difference = Difference(d.kind, d.path, d.message(a, b))
                found.setdefault((d.kind, d.path, difference.message), difference)
    every = tuple(found.values())
    breaking = tuple(d for d in every if d.kind in BREAKING)
    return Verdict(not breaking, mode, policy, every, breaking)
