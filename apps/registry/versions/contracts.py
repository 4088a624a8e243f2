"""Data contracts: the `metadata` and `ruleSet` Confluent clients (7.4 on) send with a
schema, and the defaults and overrides the Schema Registry API's config carries for them.

Steward keeps them with each version and answers them where the reference registry
does; it never executes a rule (clients do). A registration's contract is the reference
registry's: what the request sends, or else the subject's latest version's; laid over
the config's default and under its override (`merge(merge(default, sent), override)`).
The contract is part of the schema's identity: the same schema with another contract is
a new version, with its own id.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from google.protobuf import descriptor_pb2

from apps.registry import subjects
from apps.registry.formats import Difference
from apps.registry.models import SchemaVersion
from apps.registry.versions.errors import RegistryRefused

CONFIG_KEYS = (
    "defaultMetadata",
    "overrideMetadata",
    "defaultRuleSet",
    "overrideRuleSet",
    "normalize",  # whether registrations are normalized, as `normalize=true` asks
    "alias",  # the subject this one stands for (a subject's own config only)
    "validateFields",  # whether reserved fields (`confluent:reserved`) are enforced
    "compatibilityGroup",  # the metadata property whose value groups the versions checked
)
FLAGS = ("normalize", "validateFields")
NAMES = ("alias", "compatibilityGroup")
RESERVED = "confluent:reserved"  # the metadata property naming a schema's reserved fields
# the differences reserved_breaks finds (judged against no version)
RESERVED_KINDS = ("RESERVED_FIELD_REMOVED", "FIELD_CONFLICTS_WITH_RESERVED_FIELD")
RULE_LISTS = ("migrationRules", "domainRules", "encodingRules")
RULE_KINDS = ("TRANSFORM", "CONDITION")
MIGRATION_MODES = ("UPGRADE", "DOWNGRADE", "UPDOWN")
DOMAIN_MODES = ("WRITE", "READ", "WRITEREAD")
RULE_MODES = MIGRATION_MODES + DOMAIN_MODES
# the modes each list takes, and the reference's words when a rule's is another (42210)
LIST_MODES = {
    "migrationRules": (MIGRATION_MODES, "Migration rules can only be UPGRADE, DOWNGRADE, UPDOWN"),
    "domainRules": (DOMAIN_MODES, "Domain rules can only be WRITE, READ, WRITEREAD"),
    "encodingRules": (DOMAIN_MODES, "Encoding rules can only be WRITE, READ, WRITEREAD"),
}


def _invalid(message: str) -> RegistryRefused:
    return RegistryRefused(f"Invalid schema: {message}", registry_code=42201)


def _strings(value, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _invalid(f"{where} is a list of strings")
    return value


def valid_metadata(value, where: str = "metadata") -> dict | None:
    """The metadata as sent (`tags`: path → tags, `properties`: name → value,
    `sensitive`: names), or None; refused (42201) when those have another shape. Fields a
    newer client sends besides them are kept, as the reference's clients expect."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _invalid(f"{where} is an object")
    tags, properties = value.get("tags") or {}, value.get("properties") or {}
    if not isinstance(tags, dict):
        raise _invalid(f"{where}.tags is an object")
    for path, names in tags.items():
        _strings(names, f"{where}.tags[{path[:100]!r}]")
    if not isinstance(properties, dict) or not all(isinstance(v, str) for v in properties.values()):
        raise _invalid(f"{where}.properties maps names to strings")
    _strings(value.get("sensitive") or [], f"{where}.sensitive")
    return value


def _valid_rule(rule, where: str) -> None:
    if not isinstance(rule, dict) or not isinstance(rule.get("name"), str) or not rule["name"]:
        raise _invalid(f"{where} is a rule with a name")
    name = rule["name"][:100]
    if rule.get("kind", "TRANSFORM") not in RULE_KINDS:
        raise _invalid(f"rule {name!r} has an unknown kind")
    if rule.get("mode", "UPGRADE") not in RULE_MODES:
        raise _invalid(f"rule {name!r} has an unknown mode")
    if not isinstance(rule.get("type", ""), str):
        raise _invalid(f"rule {name!r} names its type as a string")
    params = rule.get("params")
    if params is not None and (
        not isinstance(params, dict) or not all(isinstance(v, str) for v in params.values())
    ):
        raise _invalid(f"rule {name!r}'s params map names to strings")


def valid_rule_set(value, where: str = "ruleSet") -> dict | None:
    """The rule set as sent (migrationRules, domainRules, encodingRules: lists of rules),
    or None; refused (42201) when those have another shape. As the reference's
    RuleSet.validate refuses them (42210): a rule whose mode is not its list's
    (migration rules UPGRADE, DOWNGRADE or UPDOWN; domain and encoding rules WRITE, READ
    or WRITEREAD), two rules of one name in the set. Other fields (a newer client's
    `enableAt`) are kept."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _invalid(f"{where} is an object")
    names = set()
    for kind in RULE_LISTS:
        rules = value.get(kind) or []
        if not isinstance(rules, list):
            raise _invalid(f"{where}.{kind} is a list")
        modes, words = LIST_MODES[kind]
        for n, rule in enumerate(rules):
            _valid_rule(rule, f"{where}.{kind}[{n}]")
            if rule["name"] in names:
                raise RegistryRefused(
                    f"Found rule with duplicate name '{rule['name'][:100]}'", registry_code=42210
                )
            names.add(rule["name"])
            # a rule without a mode takes its list's first (the reference's clients send one)
            if rule.get("mode", modes[0]) not in modes:
                raise RegistryRefused(words, registry_code=42210)
    return value


def valid_config(body: dict) -> dict:
    """The config's fields other than its level the body sends (those it leaves out:
    absent): the data-contract settings, the flags and the names."""
    given = {}
    for key in CONFIG_KEYS:
        if key not in body:
            continue
        if key in FLAGS:
            given[key] = _valid_flag(body[key], key)
        elif key in NAMES:
            given[key] = _valid_name(body[key], key)
        else:
            check = valid_metadata if key.endswith("Metadata") else valid_rule_set
            given[key] = check(body[key], key)
    return given


def _valid_flag(value, where: str) -> bool | None:
    """A config's true/false field; null clears it. Anything else is refused as the
    reference refuses a body it cannot read into its config (422, error_code 422)."""
    if value is not None and not isinstance(value, bool):
        raise RegistryRefused(f"{where} is true or false", registry_code=422)
    return value


def _valid_name(value, where: str) -> str | None:
    """A config's string field (a subject, a property's name); null or "" clears it, as
    the reference treats an empty alias as none."""
    if value is not None and not isinstance(value, str):
        raise RegistryRefused(f"{where} is a string", registry_code=422)
    if value is not None and (len(value) > 500 or not value.isprintable()):
        raise RegistryRefused(f"{where} is at most 500 printable characters", registry_code=422)
    return value or None


def merge_metadata(base: dict | None, over: dict | None) -> dict | None:
    """`over` laid on `base`: tags and sensitive names joined, properties replaced."""
    if base is None or over is None:
        return over if base is None else base
    tags = {k: list(v) for k, v in (base.get("tags") or {}).items()}
    for path, names in (over.get("tags") or {}).items():
        tags[path] = sorted({*tags.get(path, []), *names})
    merged = {
        "tags": tags,
        "properties": {**(base.get("properties") or {}), **(over.get("properties") or {})},
        "sensitive": sorted({*(base.get("sensitive") or []), *(over.get("sensitive") or [])}),
    }
    return {k: v for k, v in merged.items() if v}


def merge_rule_set(base: dict | None, over: dict | None) -> dict | None:
    """`over` laid on `base`: a rule of `over` replaces `base`'s rule of the same name in
    its list, the others follow `base`'s."""
    if base is None or over is None:
        return over if base is None else base
    merged = {}
    for kind in RULE_LISTS:
        replacing = {r["name"]: r for r in over.get(kind) or []}
        kept = [r for r in base.get(kind) or [] if r["name"] not in replacing]
        rules = kept + list(over.get(kind) or [])
        if rules:
            merged[kind] = rules
    return merged


@dataclass(frozen=True)
class Sent:
    """A registration's data contract as sent (valid already), and the subject's contract
    settings in force (config_in_force): the contract a version gets once its subject's
    latest version is known (the gate reads it anyway)."""

    metadata: dict | None = None
    rule_set: dict | None = None
    config: dict | None = None

    def effective(self, previous: SchemaVersion | None) -> tuple[dict | None, dict | None]:
        return effective(self.metadata, self.rule_set, previous, self.config or {})


def effective(
    metadata, rule_set, previous: SchemaVersion | None, config: dict
) -> tuple[dict | None, dict | None]:
    """The contract a registration gets: what it sends (valid), or its subject's latest
    version's, laid over the config's defaults and under its overrides."""
    if metadata is None and previous is not None:
        metadata = previous.metadata
    if rule_set is None and previous is not None:
        rule_set = previous.rule_set
    metadata = merge_metadata(
        merge_metadata(config.get("defaultMetadata"), metadata), config.get("overrideMetadata")
    )
    rule_set = merge_rule_set(
        merge_rule_set(config.get("defaultRuleSet"), rule_set), config.get("overrideRuleSet")
    )
    return metadata, rule_set


def config_in_force(own: dict, registry: dict) -> dict:
    """A subject's contract settings: each of its own, else the registry's."""
    return {key: own.get(key, registry.get(key)) for key in CONFIG_KEYS}


def rules_changed(version: SchemaVersion, before: SchemaVersion | None) -> bool:
    """Whether the version's rules differ from the version before it: news to consumers,
    as a schema change is."""
    return before is not None and (version.rule_set or None) != (before.rule_set or None)


def alias_of(subject: str, own: dict) -> str | None:
    """The subject `subject` stands for: the alias its own config (`own`) names, once (an
    alias's alias is not followed), qualified with the subject's context when it names
    none, as the reference's AliasFilter resolves it; None when it names none."""
    alias = own.get("alias")
    if not alias:
        return None
    context = subjects.context_of(subject)
    if context != "." and not alias.startswith(":."):
        return f":{context}:{alias}"
    return alias


def group_value(metadata: dict | None, group: str) -> str | None:
    """The value a version's metadata gives the compatibility group's property (None:
    none, a group of its own too)."""
    return ((metadata or {}).get("properties") or {}).get(group)


def in_group(versions: list[SchemaVersion], metadata: dict | None, config: dict) -> list:
    """The versions a new one (with `metadata`) is checked against: under a config's
    `compatibilityGroup`, only those whose metadata gives that property the same value
    (no value matching no value), as the reference filters them; else all."""
    group = config.get("compatibilityGroup")
    if not group:
        return versions
    value = group_value(metadata, group)
    return [v for v in versions if group_value(v.metadata, group) == value]


def reserved_fields(metadata: dict | None) -> set[str]:
    """The fields a version's metadata reserves: `confluent:reserved`, comma-separated."""
    listed = group_value(metadata, RESERVED) or ""
    return {name.strip() for name in listed.split(",") if name.strip()}


def top_level_fields(parsed) -> set[str]:
    """The names of a parsed schema's top-level fields, as the reference's
    `hasTopLevelField` reads them: an Avro record's fields, a JSON Schema's properties, the
    fields of a .proto file's first message."""
    if parsed.kind == "PROTOBUF":
        descriptor = descriptor_pb2.FileDescriptorProto.FromString(
            base64.standard_b64decode(parsed.checked.serialized())
        )
        first = descriptor.message_type[0] if descriptor.message_type else None
        return {f.name for f in first.field} if first is not None else set()
    source = parsed.sent if parsed.sent is not None else parsed.document
    if isinstance(source, str):
        source = json.loads(source)  # parsed already: valid JSON
    if not isinstance(source, dict):
        return set()
    if parsed.kind == "AVRO":
        fields = source.get("fields") if source.get("type") == "record" else None
        return {f["name"] for f in fields or () if isinstance(f, dict)}
    properties = source.get("properties")
    return set(properties) if isinstance(properties, dict) else set()


def reserved_breaks(
    config: dict, fields: set[str], metadata: dict | None, previous: SchemaVersion | None
) -> list[Difference]:
    """With the config's `validateFields` (the reference's `schema.validate.fields`, false
    by default), what a new version with those top-level `fields` and that `metadata`
    breaks: a reserved field it has, a field the latest version (`previous`) reserved that
    it no longer reserves. The reference reports both as incompatibilities."""
    if not config.get("validateFields"):
        return []
    reserved = reserved_fields(metadata)
    kept = reserved_fields(previous.metadata) if previous is not None else set()
    removed = [
        Difference(
            kind=RESERVED_KINDS[0],
            path=f"#/metadata/properties/{RESERVED}",
            message=f"The new schema has reserved field {name} removed from its metadata "
            "which is present in the old schema's metadata.",
        )
        for name in sorted(kept - reserved)
    ]
    conflicts = [
        Difference(
            kind=RESERVED_KINDS[1],
            path=f"#/{name}",
            message=f"The new schema has field that conflicts with the reserved field {name}.",
        )
        for name in sorted(reserved & fields)
    ]
    return removed + conflicts


VERSION = "confluent:version"  # the metadata property naming the version it was made as


def version_wanted(number) -> int | None:
    """A registration's `version` outside IMPORT: None (or 0) for none, -1 for the
    latest, else the number the new version must have; refused (42202) when it is none of
    those."""
    if number is None or (type(number) is int and -1 <= number < 2**31):
        return number
    raise RegistryRefused(
        f"The specified version '{str(number)[:50]}' is not a valid version id. Allowed "
        "values are between [1, 2^31-1] and -1 for the latest",
        registry_code=42202,
    )


def version_stamped(contract: tuple, wanted: int | None, number: int) -> tuple:
    """A new version's contract (metadata, ruleSet) as the reference records it: its
    number as the metadata's `confluent:version` when the registration sent a `version`
    (-1 or a number) or the metadata names one already (any value, -1 and 0 too)."""
    metadata, rule_set = contract
    if wanted in (None, 0) and VERSION not in ((metadata or {}).get("properties") or {}):
        return contract
    properties = {**((metadata or {}).get("properties") or {}), VERSION: str(number)}
    return {**(metadata or {}), "properties": properties}, rule_set


def require_next(wanted: int | None, number: int) -> None:
    """Refused (42201) when the `version` a registration sent is a number but not the
    next one (`number`), as the reference refuses it once the schema has passed the
    compatibility check."""
    if wanted not in (None, 0, -1) and wanted != number:
        raise _invalid("Version is not one more than previous version")


# the config's settings a registration's contract is laid over or under
LAID = ("defaultMetadata", "overrideMetadata", "defaultRuleSet", "overrideRuleSet")


def laid(config: dict) -> bool:
    """Whether the config has contract defaults or overrides (the reference's
    hasDefaultsOrOverrides: a registration is not looked up before it is laid)."""
    return any(config.get(key) for key in LAID)


def _version_number(metadata: dict | None) -> int | None:
    """The metadata's `confluent:version` as a number (None: none, or not a number)."""
    value = group_value(metadata, VERSION)
    try:
        return None if value is None else int(value)
    except ValueError:
        return None


def _bare(metadata: dict | None, drop_version: bool = False) -> dict:
    """The metadata's fields that say something (empty ones are none), without
    `confluent:version` when `drop_version`."""
    found = dict(metadata or {})
    if drop_version and isinstance(found.get("properties"), dict):
        found["properties"] = {k: v for k, v in found["properties"].items() if k != VERSION}
    return {k: v for k, v in found.items() if v not in (None, {}, [])}


def _looks_up(contract: tuple, version: SchemaVersion) -> bool:
    """Whether a schema sent with `contract` (metadata, ruleSet) is `version`'s (of the
    same schema), as the reference's canLookup compares them: `confluent:version` on one
    side only is left out (on the sent side it must name the version's number); on
    both or neither, the contracts are the same."""
    metadata, rule_set = contract
    if rule_set != version.rule_set:
        return False
    sent, kept = _version_number(metadata), _version_number(version.metadata)
    if (sent is None) == (kept is None):
        if metadata is None or version.metadata is None:
            return metadata is None and version.metadata is None
        return _bare(metadata) == _bare(version.metadata)
    if sent is not None and sent != version.version:
        return False
    return _bare(metadata, True) == _bare(version.metadata, True)


def looked_up(contract: tuple, versions: list[SchemaVersion]) -> list[SchemaVersion]:
    """Those of `versions` (of the same schema, oldest first) a schema sent with
    `contract` is, as the reference finds them: the ones with that very contract (its
    look-up by hash), else those its canLookup takes (_looks_up)."""
    exact = [v for v in versions if v.contract == contract]
    return exact or [v for v in versions if _looks_up(contract, v)]
