"""Registering through the Schema Registry API: one call per request, in one
transaction, for a subject the caller has parsed and the schema and references as sent.

The same gate as a release's ModelSync decides (apps.registry.versions.gate): a breaking
schema is refused (409) and names the consumers that have not acknowledged it; so is one
the level passes that a consumer's declared reader cannot read (the compatibility test
still answers the level's verdict, as the reference registry does).
Registering never makes the caller a producer of the topic (only a release or an
operator does), and on a topic that has producers only they (and operators) register.
A subject in IMPORT mode takes a migration's versions with the ids and numbers they had.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass

from django.db import connection, transaction
from django.utils import timezone

from apps.core.context import Actor
from apps.core.scope import current_scope, system_scope
from apps.registry import selectors, subjects
from apps.registry.models import (
    SchemaIdentity,
    SchemaReference,
    SchemaVersion,
    Service,
    Topic,
    schema_guid,
    schema_identity_key,
)
from apps.registry.services import (
    require_produces,
    schema_references_record,
    service_ensure,
    subscribe_steward_consumers_on_commit,
)
from apps.registry.subjects import Subject
from apps.registry.versions import contracts
from apps.registry.versions.errors import NotRegistered, RegistryRefused
from apps.registry.versions.gate import Registering, Sync, TopicAnswer, sync_topic
from apps.registry.versions.modes import require_writable
from apps.registry.versions.submitted import find_registered, parse_submitted, reference_key
from apps.registry.versions.texts import registry_text
from apps.tenancy.audit import audit_record

State = SchemaVersion.State


@dataclass(frozen=True)
class Registered:
    """The version a registration names, and its references when the registration knows
    them without asking (None: read them)."""

    version: SchemaVersion
    references: list | None = None
    subject: str | None = None  # the subject registered under, when an alias named another


def subject_register(
    *,
    actor: Actor,
    caller: str,
    subject: Subject,
    schema_type,
    schema,
    references=None,
    normalize: bool = False,
    schema_id=None,
    number=None,
    metadata=None,
    rule_set=None,
) -> Registered:
    """Register the schema sent (its type, its text, its references and its data contract
    as sent) under the subject, for the service named `caller`: its id when it is (or
    becomes) published; refused (NotRegistered, 409) when it is breaking: it waits for
    the consumers still to acknowledge, or, when none must, it is not kept at all. With
    `schema_id` (and `number`), or on a subject in IMPORT mode, the version a migration
    brings, with its id and number."""
    with _system_scope_once():  # the view's transaction, or one of its own
        topic = selectors.topic_for_registering(subject.topic)
        # a subject whose own config names an alias registers under the aliased subject
        alias = contracts.alias_of(subject.name, selectors.subject_contract(topic, subject.role))
        if alias is not None:
            subject = _alias_subject(alias)
            topic = selectors.topic_for_registering(subject.topic)
        if topic is not None and topic.produced:
            require_produces(actor, topic)
        # the mode and the level, both registry-wide settings, in one read
        defaults = selectors.registry_defaults()
        config = contracts.config_in_force(
            selectors.subject_contract(topic, subject.role),
            selectors.registry_contract(defaults),
        )
        if _blank(schema):
            schema_type, schema, references = _latest_schema(
                topic, subject.role, defaults, (schema_type, schema, references)
            )
        # a config's `normalize` normalizes every registration, as the reference's does
        parsed, resolved = parse_submitted(
            schema_type,
            schema,
            references,
            normalize=normalize or bool(config.get("normalize")),
            lock=True,
        )
        mode = require_writable(topic, subject.role, subject.name, defaults)
        service = service_ensure(actor=actor, name=caller)
        contract = contracts.Sent(
            metadata=contracts.valid_metadata(metadata),
            rule_set=contracts.valid_rule_set(rule_set),
            config=config,
        )
        given = {
            "actor": actor,
            "service": service,
            "topic_name": subject.topic,
            "role": subject.role,
            "parsed": parsed,
            "references": resolved,
        }
        if mode == "IMPORT" or schema_id is not None:
            previous = selectors.published_versions(topic, subject.role).last() if topic else None
            given["contract"] = contract.effective(previous)
            found = _imported_already(topic, subject, given, contract, schema_id, number)
            if found is not None:
                return Registered(found, subject=subject.name)
            version = _import(given, subject, mode, schema_id, number)
            schema_references_record(version, resolved)
            return Registered(version, subject=subject.name)
        answer = schema_register(
            **given,
            release=f"schema-registry:{subject.name}:{parsed.fingerprint}",
            defaults=defaults,
            absent=topic is None,
            registering=Registering(subject.name, contract, contracts.version_wanted(number)),
        )
        return _registered(answer, subject.name)


def _blank(schema) -> bool:
    return schema is None or (isinstance(schema, str) and not schema.strip())


def _latest_schema(topic, role: str, defaults: dict, sent: tuple) -> tuple:
    """(type, text, references) a registration without a schema registers: its subject's
    latest live version's, as the reference's registration takes them (to give that
    schema a new data contract), but in IMPORT mode; else those sent (refused as
    invalid)."""
    latest = selectors.published_versions(topic, role).last() if topic is not None else None
    if latest is None or selectors.registry_mode_of(topic, role, defaults) == "IMPORT":
        return sent
    rows = selectors.references_of([latest.pk]).get(latest.pk, [])
    references = [
        {
            "name": row.name,
            "subject": subjects.subject_of(row.referenced.topic.name, row.referenced.role),
            "version": row.referenced.version,
        }
        for row in rows
    ]
    return latest.schema_type, registry_text(latest, rows), references


def _alias_subject(alias: str) -> Subject:
    """The subject an alias names, to register under: refused (42208) when its name is
    not a subject's, as naming it in the path would be."""
    try:
        return subjects.parse(alias)
    except subjects.InvalidSubject as exc:
        raise RegistryRefused(str(exc), registry_code=42208) from None


def _registered(answer: TopicAnswer, subject: str) -> Registered:
    """The gate's answer as a registration: the version, or refused as the reference
    registry refuses it."""
    if answer.outcome == "rejected":
        raise RegistryRefused(f"Invalid schema: {answer.reason}", registry_code=42201)
    if answer.outcome == "refused":
        raise NotRegistered(answer.reason)
    if answer.outcome == "awaiting_acknowledgement":
        raise NotRegistered(_held(answer, subject))
    # the reference rows the gate made with a new version (a waiting one holds them too)
    return Registered(answer.row, answer.recorded, subject)


def _held(answer: TopicAnswer, subject: str) -> str:
    """Why a registration waits: the level's breaking differences, or, for a schema the
    level passes, the consumers' declared readers that cannot read it. Refused as a
    breaking schema is (409): a client learns the version is not (yet) the subject's."""
    waiting = ", ".join(answer.awaiting)
    if answer.verdict.get("compatible") is True:
        readers = answer.verdict.get("readers", {})
        broken = "; ".join(
            f"{name}: {_differences(readers[name]['breaking'])}"
            for name in answer.awaiting
            if name in readers
        )
        return (
            "Schema being registered is compatible with an earlier schema for subject "
            f'"{subject[:300]}", but the reader schema its consumers declared cannot read it '
            f"({broken}); it waits for acknowledgement from: {waiting}."
        )
    breaking = _differences(answer.verdict.get("breaking", []), "; ")
    return (
        "Schema being registered is incompatible with an earlier schema for subject "
        f'"{subject[:300]}" ({breaking}); it waits for acknowledgement from its '
        f"consumers: {waiting}. Once they acknowledge it, registering it again succeeds."
    )


def _differences(differences: list[dict], separator: str = ", ") -> str:
    return separator.join(f"{d['kind']} at {d['path']}" for d in differences)


def _imported_already(
    topic, subject: Subject, given: dict, contract: contracts.Sent, schema_id, number
) -> SchemaVersion | None:
    """The subject's live version of the schema sent (with the data contract sent, if
    any) when a registration without a version names no id or that version's: answered
    before IMPORT asks for an id, as the reference looks a registration up first, unless
    the config has contract defaults or overrides (its look-up is skipped then)."""
    config = contract.config or {}
    if topic is None or number not in (None, 0, -1) or contracts.laid(config):
        return None
    found = find_registered(
        topic,
        subject.role,
        given["parsed"],
        given["references"],
        metadata=contract.metadata,
        rule_set=contract.rule_set,
        laid=False,
    )
    if found is not None and number == -1:
        # `version: -1` looks the schema up against the latest version alone
        found = found if found == selectors.published_versions(topic, subject.role).last() else None
    return found if found is not None and schema_id in (None, found.identity_id) else None


def _import(given: dict, subject: Subject, mode: str, schema_id, number) -> SchemaVersion:
    """Register with the id and version given: only a subject in IMPORT mode may."""
    if mode != "IMPORT":
        raise RegistryRefused(
            f"Subject {subject.name[:300]} is not in import mode: no id may be given"
        )
    valid = all(type(n) is int and 0 < n < 2**31 for n in (schema_id, number))
    if not valid:
        raise RegistryRefused(
            "In import mode, give the schema's id and version (positive integers)."
        )
    return version_import(**given, schema_id=schema_id, number=number)


def schema_register(
    *,
    actor: Actor,
    service: Service,
    topic_name: str,
    role: str,
    parsed,
    release: str,
    references=(),
    defaults: dict[str, str] | None = None,
    absent: bool = False,
    registering: Registering | None = None,
) -> TopicAnswer:
    """ModelSync's decision for one subject (the topic's role), through the same gate,
    for a schema the caller has parsed (bundled with its references: (name, referenced
    version), which tell its id apart and are kept with a new version). Never replayed
    nor kept as a release's answer (clients repeat a registration to learn an id), and
    it names no producer: only a release or an operator does. The answer's `row` is the
    version it names. `absent`: the caller read in this transaction that the topic does
    not exist (see Sync)."""
    entry = {
        "name": topic_name,
        "producers": [],
        "role": role,
        "references": references,
        # the reference registry answers any live version's id for a schema the subject
        # has had, not only the latest's: a producer still on an older schema gets its id
        "any_version": True,
        "registering": registering,
    }
    with _system_scope_once():
        sync = Sync(
            actor=actor,
            service=service,
            release=release,
            topics=[entry],
            catalog=False,
            defaults=defaults,
            absent=absent,
        )
        return sync_topic(sync, entry, parsed)


def _system_scope_once():
    """The system scope, or the caller's when it is in that scope's transaction already
    (the Schema Registry API's views are): entering it again would cost a savepoint and
    two settings of the same values, per registration."""
    if current_scope().system and connection.in_atomic_block:
        return nullcontext()
    return system_scope()


def _import_identity(schema_id: int, parsed, key: str, guid: str) -> None:
    """The imported id, made the schema's: refused (42205, as the reference words it)
    when the id is another schema's. The same schema under a second id is kept, as the
    reference keeps it, without taking over from the id new registrations reuse.

    An id is another schema's while any version of another schema has it, soft-deleted
    ones included (they are still served by id); the same schema with other references
    or another data contract is not another (the reference compares the schema alone).
    Once every version that had it is deleted permanently, the reference no longer knows
    the id (its lookup by id finds no subject-version) and lets an import give it to
    another schema; so does Steward, and the schema the id named before gets a new id if
    it is registered again."""
    kind = parsed.kind
    existing = SchemaIdentity.objects.select_for_update().filter(pk=schema_id).first()
    if existing is not None and existing.key == key:
        if existing.guid is None:  # an id from before GUIDs (migration 0024), given again
            existing.guid = guid
            existing.save(update_fields=["guid"])
        return
    if existing is not None and existing.versions.exists():
        if existing.versions.exclude(fingerprint=parsed.fingerprint).exists():
            raise RegistryRefused(
                f"Overwrite new schema with id {schema_id} is not permitted.", registry_code=42205
            )
        return
    taken = SchemaIdentity.objects.filter(key=key, reusable=True).exclude(pk=schema_id).exists()
    if existing is not None:
        existing.key, existing.guid, existing.schema_type = key, guid, kind
        existing.reusable = not taken
        existing.save(update_fields=["key", "guid", "schema_type", "reusable"])
        return
    SchemaIdentity.objects.create(
        pk=schema_id, key=key, guid=guid, schema_type=kind, reusable=not taken
    )
    # ids Steward assigns from now on come after the imported ones
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('registry_schemaidentity', 'id'),"
            " GREATEST((SELECT max(id) FROM registry_schemaidentity), 1))"
        )


def version_import(
    *,
    actor: Actor,
    service: Service,
    topic_name: str,
    role: str,
    parsed,
    schema_id: int,
    number: int,
    references=(),
    contract=(None, None),
) -> SchemaVersion:
    """A migration's version, registered with the id and version it had in the registry
    it comes from (the subject in IMPORT mode): published as it is, without a check or the
    gate (it is history already in use), audited, not announced. The same import again
    answers the same version; one over a soft-deleted version of the same number replaces
    it (live again, as imported), as the reference's import writes over it."""
    key = schema_identity_key(parsed.kind, parsed.fingerprint, reference_key(references), contract)
    guid = schema_guid(parsed.text, references, contract)
    with system_scope(), transaction.atomic():
        same = SchemaVersion.objects.filter(
            topic__name=topic_name,
            role=role,
            version=number,
            identity_id=schema_id,
            deleted_at__isnull=True,
        ).first()
        if same is not None and same.fingerprint == parsed.fingerprint:
            return same
        _import_identity(schema_id, parsed, key, guid)
        topic = Topic.objects.select_for_update().filter(name=topic_name).first()
        if topic is None:
            topic = Topic(name=topic_name)
            topic.full_clean()
            topic.save()
            audit_record(actor=actor, action="topic.create", instance=topic)
            subscribe_steward_consumers_on_commit([topic_name])
        taken = topic.schema_versions.filter(role=role, version=number).first()
        if taken is not None and taken.deleted_at is None:
            raise RegistryRefused(
                f"Version {number} of {topic_name} ({role}) exists already with another id.",
                registry_code=42207,
            )
        imported = {
            "identity_id": schema_id,
            "schema_type": parsed.kind,
            "schema": parsed.document,
            "canonical": parsed.canonical,
            "text": parsed.text,
            "metadata": contract[0],
            "rule_set": contract[1],
            "fingerprint": parsed.fingerprint,
            "state": State.PUBLISHED,
            "published_at": timezone.now(),
            "verdict": {"imported": True},
            "submitted_by": service,
            "release": "schema-registry:import",
        }
        if taken is None:
            version = SchemaVersion.objects.create(
                topic=topic, role=role, version=number, **imported
            )
            replaced = None
        else:
            version, replaced = _replace_deleted(taken, imported)
        if role == "value" and number > topic.current_schema_version:
            topic.current_schema_version = number
            topic.save(update_fields=["current_schema_version", "updated_at"])
        audit_record(
            actor=actor,
            action="schema_version.import",
            instance=version,
            changes={"id": [replaced, schema_id], "version": [None, number]},
        )
    return version


def _replace_deleted(version: SchemaVersion, imported: dict) -> tuple[SchemaVersion, int]:
    """The soft-deleted version an import of its number writes over: the imported schema,
    id and contract, live again, with the references it is imported with (recorded
    after); answered with the id it had."""
    replaced = version.identity_id
    for name, value in imported.items():
        setattr(version, name, value)
    version.deleted_at = None
    version.save()
    SchemaReference.objects.filter(version=version).delete()
    return version, replaced
