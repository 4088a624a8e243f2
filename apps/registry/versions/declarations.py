"""Consumers' reader schemas declared: a consumer's release names the schema its code
reads a topic with, and the version waiting on the topic is judged again for it."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from apps.core.context import Actor
from apps.core.errors import Conflict, DomainError, ValidationFailed
from apps.core.scope import system_scope
from apps.registry import formats
from apps.registry.codes import RegistryCode
from apps.registry.models import ReaderSchema, SchemaVersion, Service, Topic
from apps.registry.selectors import current_readers, missing_acknowledgements
from apps.registry.services import require_speaks_for
from apps.registry.subjects import subject_of
from apps.registry.versions.acknowledgements import lock_waiting, publish
from apps.registry.versions.errors import RegistryRefused
from apps.registry.versions.readers import NO_READER, reader_verdict
from apps.registry.versions.submitted import parse_referencing, resolve_references
from apps.tenancy.audit import audit_record

State = SchemaVersion.State


class ReaderRefused(ValidationFailed):
    """A reader schema declaration refused: answered 422 with a stable code."""

    status = 422


def reader_service(*, actor: Actor, named: str | None) -> Service:
    """The consumer a reader declaration speaks for: a service account's own, or the one
    an operator names. Never created here: a service that does not exist consumes
    nothing, and a refused declaration must leave the catalog as it was."""
    account = actor.service_account
    name = named or (account.name if account is not None else "")
    if not name:
        raise ReaderRefused(
            "Name the consumer.", code=RegistryCode.SERVICE_REQUIRED, field="service"
        )
    require_speaks_for(actor, name)
    service = Service.objects.filter(name=name).first()
    if service is None:
        raise ReaderRefused(
            f"No service is named {name}; only a consumer declares a reader.",
            code=RegistryCode.NOT_A_CONSUMER,
            field="service",
        )
    return service


def reader_declare(
    *,
    actor: Actor,
    service: Service,
    topic: Topic,
    release: str,
    schema,
    schema_type: str = "JSON",
    role: str = "value",
    references=None,
) -> tuple[ReaderSchema, SchemaVersion | None]:
    """Declare the reader schema a consumer's release reads the topic with (for itself
    only); audited. The same release declaring the same schema again is the same
    declaration; another schema under the same release is refused (409).

    `references` ({name, subject, version}, as a writer's) name the other subjects'
    versions the reader uses (an Avro named type, a Protobuf import, a JSON Schema
    `$ref`): resolved as a writer's are, and the reader kept bundled with them, so that it
    is judged later without reading them again. While the reader is in force, the
    versions it names cannot be deleted (deletion._referenced_refused).

    The version of the topic (and role) waiting for acknowledgement, if there is one, is
    judged again for this consumer: a reader that reads it releases the consumer from
    acknowledging (and the last one released publishes it), one that does not puts it
    back among the awaited. Answers the declaration and that version."""
    require_speaks_for(actor, service.name)
    with system_scope(), transaction.atomic():
        # The referenced versions are held until commit, as a writer's are, so that a
        # delete either sees this reader or happens before it and refuses it.
        parsed, resolved = _reader_parsed(service, topic, schema, schema_type, references)
        found = ReaderSchema.objects.filter(
            service=service, topic=topic, role=role, release=release
        ).first()
        if found is not None:
            return _same_declaration(found, parsed, schema_type), _waiting_of(topic, role)
        before = current_readers(topic, role, [service.name]).get(service.name)
        try:
            with transaction.atomic():
                reader = ReaderSchema.objects.create(
                    service=service,
                    topic=topic,
                    role=role,
                    release=release,
                    schema_type=schema_type,
                    schema=parsed.document,
                    fingerprint=parsed.fingerprint,
                    references=[
                        {
                            "name": name,
                            "subject": subject_of(target.topic.name, target.role),
                            "version": target.version,
                        }
                        for name, target in resolved
                    ],
                )
        except IntegrityError:
            # The same release declared concurrently: the other request's row answers,
            # if it is the same schema.
            found = ReaderSchema.objects.get(
                service=service, topic=topic, role=role, release=release
            )
            return _same_declaration(found, parsed, schema_type), _waiting_of(topic, role)
        audit_record(
            actor=actor,
            action="reader_schema.declare",
            instance=reader,
            changes={
                "release": [before.release if before else None, release],
                "fingerprint": [before.fingerprint if before else None, parsed.fingerprint],
            },
        )
        return reader, _reconsider(actor, topic, role, service, reader)


def _reader_parsed(service: Service, topic: Topic, schema, schema_type: str, references):
    """The reader schema parsed with the versions its references name resolved, or
    ReaderRefused: an unknown type, a reference that names nothing, an invalid schema,
    or a service that does not consume the topic."""
    if schema_type not in formats.TYPES:
        raise ReaderRefused(
            f"Unknown schema type {schema_type!r}; supported: {', '.join(formats.TYPES)}.",
            code=RegistryCode.INVALID_SCHEMA_TYPE,
            field="schema_type",
        )
    try:
        resolved = resolve_references(references, schema_type, lock=True)
    except RegistryRefused as exc:
        raise ReaderRefused(
            exc.detail.removeprefix("Invalid schema: "),
            code=RegistryCode.INVALID_SCHEMA_REFERENCE,
            field="references",
        ) from None
    try:
        parsed = parse_referencing(schema_type, schema, resolved)
    except formats.InvalidSchema as exc:
        raise ReaderRefused(
            f"The reader schema is invalid: {exc.reason}",
            code=RegistryCode.INVALID_READER_SCHEMA,
            field="schema",
        ) from None
    if not topic.consumers.filter(pk=service.pk).exists():
        raise ReaderRefused(
            f"{service.name} does not consume {topic.name}; only a consumer declares a reader.",
            code=RegistryCode.NOT_A_CONSUMER,
            field="service",
        )
    return parsed, resolved


def _same_declaration(found: ReaderSchema, parsed, schema_type: str) -> ReaderSchema:
    """A release's reader declared again: the same declaration, or refused if its schema
    changed (a release is one build of the consumer's code, which reads one way)."""
    if found.fingerprint != parsed.fingerprint or found.schema_type != schema_type:
        raise Conflict(
            f"Release {found.release} of {found.service.name} declared another reader "
            f"schema for {found.topic.name}.",
            code=RegistryCode.RELEASE_CHANGED,
        )
    return found


def _waiting_of(topic: Topic, role: str) -> SchemaVersion | None:
    return (
        SchemaVersion.objects.select_related("topic")
        .filter(topic=topic, role=role, state=State.AWAITING)
        .first()
    )


def _reconsider(
    actor: Actor, topic: Topic, role: str, service: Service, reader: ReaderSchema
) -> SchemaVersion | None:
    """The waiting version judged again for the consumer whose reader just changed; the
    version is locked while deciding, as an acknowledgement locks it."""
    waiting = _waiting_of(topic, role)
    if waiting is None:
        return None
    version = lock_waiting(waiting)
    verdict = dict(version.verdict)
    readers = dict(verdict.get("readers") or {})
    before = readers.get(service.name, NO_READER)
    readers[service.name] = reader_verdict(
        reader, version.schema_type, version.schema, topic.compatibility_policy
    )
    verdict["readers"] = readers
    version.verdict = verdict
    version.save(update_fields=["verdict"])
    now_reads = readers[service.name]["reads"]
    if now_reads != before.get("reads"):
        audit_record(
            actor=actor,
            action="schema_version.reader_verdict",
            instance=version,
            changes={f"reads:{service.name}": [before.get("reads"), now_reads]},
        )
    if now_reads and not missing_acknowledgements(version):
        version = publish(version)
    return version


def sync_reader(actor: Actor, service: Service, release: str, entry: dict) -> dict:
    """One reader a release declares, as ModelSync answers it: declared, or rejected with
    the reason and its stable code (the release's other entries go on)."""
    name, role = entry["topic"], entry.get("role", "value")
    answer = {"topic": name, **({"role": role} if role != "value" else {})}
    topic = Topic.objects.filter(name=name).first()
    if topic is None:
        return {
            **answer,
            "outcome": "rejected",
            "code": RegistryCode.UNKNOWN_TOPIC,
            "reason": "No such topic.",
        }
    try:
        with transaction.atomic():
            reader, version = reader_declare(
                actor=actor,
                service=service,
                topic=topic,
                release=release,
                schema=entry["schema"],
                schema_type=entry.get("schema_type", "JSON"),
                role=role,
                references=entry.get("references"),
            )
    except DomainError as exc:
        return {**answer, "outcome": "rejected", "code": exc.code, "reason": exc.detail}
    answer.update(outcome="declared", fingerprint=reader.fingerprint)
    if reader.references:
        answer["references"] = reader.references
    if version is not None:
        mine = version.verdict.get("readers", {}).get(service.name, NO_READER)
        answer["waiting"] = {
            "version": version.version,
            "state": version.state,
            "reads": mine["reads"],
            "verdict": mine,
        }
    return answer
