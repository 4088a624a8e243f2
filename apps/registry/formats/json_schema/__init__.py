"""JSON Schema compatibility, judged the way Confluent Schema Registry's SchemaDiff judges it.

The contract is the shared `registry-compatibility.md`; this module is its executable form.
`diff(original, update)` walks two schemas together and reports every difference with a
JSON path and an UPPER_SNAKE kind named after SchemaDiff's `Difference.Type`; `check()`
applies a compatibility mode to a new schema and the published history, and a policy
(STRICT or LENIENT) decides which kinds are allowed.

In `diff(original, update)` data written with `original` is read with `update`: BACKWARD
compares (old, new), FORWARD (new, old), FULL both.

The walker works on the parsed JSON itself, with no intermediate schema model, so that a
check of an ordinary schema costs well under a millisecond. It resolves local `$ref`s as it
goes and never fetches anything; it memoises every pair of sub-schemas it has compared, so
recursive schemas terminate and shared definitions are compared once; and it spends from a
bounded budget: too deep a nesting, too many sub-schema pairs or too many anyOf/oneOf/allOf
pairings raise SchemaTooComplex instead of running away.
"""

from __future__ import annotations

from apps.registry.formats.errors import InvalidSchema, SchemaTooComplex
from apps.registry.formats.json_schema.kinds import _ALLOWED, KINDS
from apps.registry.formats.json_schema.meta import plainly_valid
from apps.registry.formats.json_schema.parsing import canonical, fingerprint, parse_schema
from apps.registry.formats.json_schema.refs import REFERENCE_PREFIX, bundle, unbundle
from apps.registry.formats.json_schema.vocabulary import (
    MAX_BRANCH_PAIRS,
    MAX_DEPTH,
    MAX_JSON_DEPTH,
    MAX_JSON_MEMBERS,
    MAX_JSON_NODES,
    MAX_REF_HOPS,
    MAX_REPEATS,
    MAX_WORK,
)
from apps.registry.formats.json_schema.walker import _State, _Walker
from apps.registry.formats.loader import json_type_name
from apps.registry.formats.verdicts import MODES, POLICIES, Difference, Verdict, choose

__all__ = [
    "KINDS",
    "MAX_BRANCH_PAIRS",
    "MAX_DEPTH",
    "MAX_JSON_DEPTH",
    "MAX_JSON_MEMBERS",
    "MAX_JSON_NODES",
    "MAX_REF_HOPS",
    "MAX_REPEATS",
    "MAX_WORK",
    "MODES",
    "POLICIES",
    "REFERENCE_PREFIX",
    "Difference",
    "InvalidSchema",
    "SchemaTooComplex",
    "Verdict",
    "bundle",
    "canonical",
    "check",
    "diff",
    "fingerprint",
    "is_allowed",
    "parse_schema",
    "plainly_valid",
    "unbundle",
]


def is_allowed(kind: str, policy: str) -> bool:
    return kind in _ALLOWED[choose(policy, POLICIES, "policy")]


def diff(original, update, *, policy: str = "STRICT") -> list[Difference]:
    """Every difference met reading data written with `original` through `update`.

    BACKWARD is diff(old, new); FORWARD is diff(new, old). The policy only steers the
    internal decisions that depend on compatibility (which anyOf branches match, whether a
    partially open content model covers a property, ...).
    """
    allowed = _ALLOWED[choose(policy, POLICIES, "policy")]
    return _diff(_schema(original), _schema(update), allowed, ("original", "update"))


def check(new, previous: list, *, mode: str = "BACKWARD", policy: str = "STRICT") -> Verdict:
    """Judge `new` against the published schemas `previous` (oldest first).

    Plain modes compare with previous[-1] only, *_TRANSITIVE modes with every earlier
    version, NONE with nothing. BACKWARD diffs (old, new), FORWARD (new, old), FULL both.
    """
    mode = choose(mode, MODES, "mode")
    policy = choose(policy, POLICIES, "policy")
    if isinstance(previous, dict | bool | str | bytes):
        raise TypeError("previous is a list of schemas, oldest first")
    previous = list(previous or ())
    if mode == "NONE" or not previous:
        return Verdict(True, mode, policy)
    allowed = _ALLOWED[policy]
    new = _schema(new)
    olds = previous if mode.endswith("_TRANSITIVE") else previous[-1:]
    backward = not mode.startswith("FORWARD")
    forward = not mode.startswith("BACKWARD")
    found: dict[tuple[str, str], Difference] = {}
    for old in reversed(olds):  # the latest version's explanation first
        old = _schema(old)
        if backward:
            for d in _diff(old, new, allowed, ("old", "new")):
                found.setdefault((d.kind, d.path), d)
        if forward:
            for d in _diff(new, old, allowed, ("new", "old")):
                found.setdefault((d.kind, d.path), d)
    differences = tuple(found.values())
    breaking = tuple(d for d in differences if d.kind not in allowed)
    return Verdict(not breaking, mode, policy, differences, breaking)


def _schema(value):
    if isinstance(value, dict | bool):
        return value
    if isinstance(value, str | bytes | bytearray):
        return parse_schema(value)
    raise InvalidSchema(f"a JSON Schema is an object or a boolean, not {json_type_name(value)}")


def _diff(original, update, allowed, labels) -> list[Difference]:
    walker = _Walker(original, update, allowed, labels, _State())
    try:
        walker.walk(original, update)
    except RecursionError:
        raise SchemaTooComplex("the schemas nest too deeply to compare") from None
    found: dict = {}
    for d in walker.out:
        found.setdefault((d.kind, d.path), d)
    return list(found.values())
