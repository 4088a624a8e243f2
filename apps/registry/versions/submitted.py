"""A schema as the Schema Registry API receives it: its type, its text and the other
subjects' versions its references name, parsed into one schema (bundled with what the
references name), so that registering, looking up and testing compatibility read it
alike. Refusals are the reference registry's 42201 (invalid schema)."""

from __future__ import annotations

import json

from apps.registry import formats, selectors, subjects
from apps.registry.models import SchemaVersion, Topic
from apps.registry.versions import contracts
from apps.registry.versions.errors import RegistryRefused, judged_against
from apps.registry.versions.texts import storable

SCHEMA_TYPES = list(formats.TYPES)


def _invalid(message: str) -> RegistryRefused:
    return RegistryRefused(f"Invalid schema: {message}", registry_code=42201)


def version_number(version: str) -> int | None:
    """The version a path names: None for the latest (`latest`, or -1), else its number
    in [1, 2^31-1]; refused (42202) otherwise."""
    if version in ("latest", "-1"):
        return None
    if version.isdigit() and 0 < int(version) < 2**31:
        return int(version)
    raise RegistryRefused(
        f"The specified version '{version[:50]}' is not a valid version id. Allowed "
        'values are between [1, 2^31-1] and the string "latest"',
        registry_code=42202,
    )


def _reference(n: int, item, names: set) -> tuple[str, str, int | None]:
    """(name, subject, version: None for the latest) of one reference, as sent."""
    where = f"reference {n}"
    if not isinstance(item, dict):
        raise _invalid(f"{where} is not an object")
    name, subject, number = item.get("name"), item.get("subject"), item.get("version")
    if not isinstance(name, str) or not name or len(name) > 500:
        raise _invalid(f"{where} has no name (1-500 characters)")
    if name in names:
        raise _invalid(f"two references are named {name[:100]!r}")
    names.add(name)
    if not isinstance(subject, str) or not subject:
        raise _invalid(f"{where} ({name[:100]}) names no subject")
    if number in (-1, "latest"):
        number = None
    elif type(number) is not int or not 0 < number < 2**31:
        raise _invalid(f"{where} ({name[:100]}) has no valid version")
    return name, subject, number


def resolve_references(raw, kind: str, *, lock: bool) -> list[tuple[str, SchemaVersion]]:
    """(name, referenced version) of each reference, in the order given. A reference names
    a live (published, not soft-deleted) version of a subject of the same schema type; any
    other is an invalid schema (42201), as the reference registry answers a reference it
    cannot resolve. `lock` holds the versions against a concurrent delete until commit."""
    if raw in (None, []):
        return []
    if not isinstance(raw, list):
        raise _invalid("'references' is a list of {name, subject, version}")
    resolved, names = [], set()
    for n, item in enumerate(raw):
        name, subject, number = _reference(n, item, names)
        try:
            named = subjects.parse(subject)
            target = selectors.reference_target(named.topic, named.role, number, lock=lock)
        except subjects.InvalidSubject:
            target = None
        if target is None:
            raise _invalid(
                f"no schema reference found for subject {subject[:300]!r} and version "
                f"{'latest' if number is None else number} ({name[:100]})"
            )
        if target.schema_type != kind:
            raise _invalid(f"reference {name[:100]!r} is a {target.schema_type} schema, not {kind}")
        resolved.append((name, target))
    return resolved


def reference_key(resolved) -> list[tuple[str, int]]:
    """The references as a schema's id tells schemas apart: each name and the row of the
    version it names (models.schema_identity_key)."""
    return [(name, target.pk) for name, target in resolved]


def parse_submitted(
    kind, text, references, *, normalize: bool = False, lock: bool = False
) -> tuple[formats.Parsed, list[tuple[str, SchemaVersion]]]:
    """The schema sent (`kind`: its type, blank for the reference registry's default,
    Avro), parsed and bundled with the versions its references name, and those
    references resolved. `normalize` shapes the string the registry answers for it;
    `lock` holds the referenced versions until commit (registering)."""
    kind = kind or "AVRO"
    if kind not in SCHEMA_TYPES:
        raise RegistryRefused(
            f"Invalid schema type {str(kind)[:50]!r}: Steward's registry supports "
            f"{', '.join(SCHEMA_TYPES)}.",
            registry_code=42201,
        )
    if not isinstance(text, str):
        raise _invalid("'schema' is the schema as text.")
    resolved = resolve_references(references, kind, lock=lock)
    try:
        return parse_referencing(kind, text, resolved, normalize=normalize), resolved
    except formats.InvalidSchema as exc:
        raise _invalid(exc.reason) from None


def parse_referencing(kind: str, schema, resolved, *, normalize: bool = False) -> formats.Parsed:
    """The schema (its text, or, from a release's ModelSync, the decoded JSON) parsed and
    bundled with the versions its resolved references name (resolve_references), ready to
    store; formats.InvalidSchema when it is not valid."""
    if not resolved:
        return storable(formats.parse(kind, schema, normalize=normalize))
    text = schema if isinstance(schema, str) else json.dumps(schema)
    return storable(formats.parse_with_references(kind, text, resolved, normalize=normalize))


def same_schema(versions, parsed, references) -> list[SchemaVersion]:
    """Those of `versions` (oldest first) that are the schema sent: the same schema, or
    the string the registry answers for a version sent back as it is (what Avro's parser
    drops, a primitive's doc say, is gone from it), with the same `references` ((name,
    referenced version id)), as the reference registry finds a schema by that string."""
    return [v for v in versions if v.fingerprint == parsed.fingerprint] or (
        selectors.versions_answered_as(versions, parsed.text, parsed.kind, references)
    )


def find_registered(
    topic: Topic,
    role: str,
    parsed,
    resolved,
    *,
    deleted: bool = False,
    metadata=None,
    rule_set=None,
    laid: bool = True,
) -> SchemaVersion | None:
    """The subject's live version (`deleted`: or soft-deleted one) of the schema looked
    up with the data contract sent (none: none), as the reference's look-up finds it
    (contracts.looked_up), the latest of those it finds; else (`laid`), when a contract
    laid as a registration's is (the latest live version's where none is sent, over the
    config's defaults and under its overrides) is another, one with that."""
    versions = list(selectors.published_versions(topic, role, deleted=deleted))
    same = same_schema(versions, parsed, reference_key(resolved))
    found = contracts.looked_up((metadata, rule_set), same)
    latest = (
        selectors.published_versions(topic, role).last() if laid and same and not found else None
    )
    if latest is not None:
        defaults = selectors.registry_defaults()
        config = contracts.config_in_force(
            selectors.subject_contract(topic, role), selectors.registry_contract(defaults)
        )
        filled = contracts.effective(metadata, rule_set, latest, config)
        if filled != (metadata, rule_set):
            found = contracts.looked_up(filled, same)
    return found[-1] if found else None


def compatibility_verdict(parsed, against: list[SchemaVersion], *, mode: str, policy: str):
    """The verdict on the parsed schema against published versions (oldest first), in
    `mode`; a schema of another type than theirs is incompatible, as the reference
    registry judges it."""
    kind_of = against[-1].schema_type
    if parsed.kind != kind_of:
        other = formats.Difference(
            kind="SCHEMA_TYPE_CHANGED",
            path="#/",
            message=f"Incompatible because of different schema type: {kind_of} to {parsed.kind}",
        )
        breaking = () if mode == "NONE" else (other,)
        return formats.Verdict(
            compatible=not breaking,
            mode=mode,
            policy=policy,
            differences=(other,),
            breaking=breaking,
        )
    return formats.check(
        parsed.kind, parsed.checked, [v.schema for v in against], mode=mode, policy=policy
    )


def first_failing(parsed, against: list[SchemaVersion], *, mode: str, policy: str):
    """(version, differences) of the version the schema fails against that the reference
    names in its messages: under a transitive level the newest failing of `against`
    (oldest first), else the latest alone if it fails; None when none fails. Under FULL
    the differences are the reference's: those forward first, then those backward."""
    level = mode.removesuffix("_TRANSITIVE")
    candidates = against if mode.endswith("_TRANSITIVE") else against[-1:]
    directions = ("FORWARD", "BACKWARD") if level == "FULL" else (level,)
    for version in reversed(candidates):
        verdicts = [
            compatibility_verdict(parsed, [version], mode=direction, policy=policy)
            for direction in directions
        ]
        differences = [d for verdict in verdicts for d in verdict.breaking]
        if differences:
            return version, differences
    return None


def judged_messages(
    parsed, against, breaking, *, mode: str, level: str, policy: str, validate_fields: bool
) -> list[str]:
    """A compatibility test's verbose messages for the differences found (`breaking`:
    the reserved fields' first, then those from `against`), as the reference words them:
    those from the version the schema fails against (first_failing), that version and
    its schema, then the settings judged under; none when nothing breaks."""
    if not breaking:
        return []
    failing = first_failing(parsed, against, mode=mode, policy=policy) if against else None
    old = None
    if failing is not None:
        reserved = [d for d in breaking if d.kind in contracts.RESERVED_KINDS]
        old, breaking = failing[0], [*reserved, *failing[1]]
    return [f"{d.kind} at {d.path}: {d.message}" for d in breaking] + judged_against(
        old.version if old else None, old.text if old else None, level, validate_fields
    )
