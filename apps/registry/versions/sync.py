"""A release's ModelSync: the topics it names, their producers and consumers, a payload
schema per topic through the gate, and the reader schemas a consumer's release reads
with. Publication moves the topic's current version, which producers' topic resolution
sees at once (the topic cache is dropped on save), and announces
SchemaVersionPublished."""

from __future__ import annotations

import hashlib
import json

from django.db import IntegrityError, transaction

from apps.core.context import Actor
from apps.core.errors import Conflict
from apps.core.scope import system_scope
from apps.registry.catalog import STEWARD_TOPICS
from apps.registry.codes import RegistryCode
from apps.registry.models import ModelSync, Service
from apps.registry.versions import contracts
from apps.registry.versions.declarations import sync_reader
from apps.registry.versions.errors import ContractRefused, ReferenceRefused, RegistryRefused
from apps.registry.versions.gate import Sync, sync_topic
from apps.registry.versions.submitted import resolve_references
from apps.tenancy.audit import audit_record


def model_sync(
    *,
    actor: Actor,
    service: Service,
    release: str,
    topics: list[dict],
    reads: list[dict] | None = None,
) -> dict:
    """Apply a release's ModelSync; the same release again answers what it answered.

    Each topic is all or nothing (its own savepoint). Topics the service produced
    before and this sync no longer names are reported, never deleted.

    `reads`, a consumer's release's reader schemas (`{topic, schema, schema_type?,
    role?}` per topic it consumes), are declared first, each all or nothing too, so the
    release's own readers are in force for what the rest of the sync decides.

    A topic's entry may declare its key schema beside its payload's (`key`: {schema,
    schema_type?, references?, metadata?, ruleSet?}), and each schema may name other
    subjects' versions in `references` ({name, subject, version}, as the Schema Registry
    API takes them); a reference that names none refuses the whole release
    (ReferenceRefused, 400). Each schema may carry a data contract (`metadata`,
    `ruleSet`), kept on its version as a registration through the Schema Registry API
    keeps it (the gate's one rule: versions.contracts); a malformed one refuses the whole
    release (ContractRefused, 400).
    """
    # A release that declares no reader is its topics alone.
    model = {"topics": topics, "reads": reads} if reads else topics
    body = json.dumps(model, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(body.encode()).hexdigest()
    with system_scope():
        earlier = ModelSync.objects.filter(service=service, release=release).first()
        if earlier is not None:
            if earlier.digest != digest:
                raise Conflict(
                    f"Release {release} was synced with a different model.",
                    code=RegistryCode.RELEASE_CHANGED,
                )
            return earlier.answer
        answers = []
        # a reference that names nothing refuses the release before anything is written
        entries = [_referencing(n, entry) for n, entry in enumerate(topics)]
        declared = [sync_reader(actor, service, release, entry) for entry in reads or ()]
        sync = Sync(actor=actor, service=service, release=release, topics=entries)
        for entry in entries:
            answers.append(sync_topic(sync, entry))
        named = {entry["name"] for entry in topics}
        not_named = sorted(
            service.produces.exclude(name__in=named)
            .exclude(name__in=[t for t, _ in STEWARD_TOPICS])
            .values_list("name", flat=True)
        )
        answer = {
            "release": release,
            "topics": [a.as_dict() for a in answers],
            "not_named": not_named,
            **({"reads": declared} if reads else {}),
        }
        try:
            with transaction.atomic():
                ModelSync.objects.create(
                    service=service, release=release, digest=digest, answer=answer
                )
        except IntegrityError:  # the same release, synced concurrently: its answer stands
            return ModelSync.objects.get(service=service, release=release).answer
        audit_record(
            actor=actor,
            action="registry.model_sync",
            instance=service,
            changes={"release": [None, release]},
        )
    return answer


def _referencing(n: int, entry: dict) -> dict:
    """The entry with its schemas' references resolved to the versions they name, in the
    same way as the Schema Registry API resolves them (submitted.resolve_references: a
    live version of a subject of the schema's type, locked until commit). Resolved before
    the sync locks its topics, as a registration resolves them before it locks its
    topic, so that the two never wait on each other's locks in opposite orders."""
    resolved = {
        **entry,
        "references": _resolved(entry, f"topics[{n}]"),
        "contract": _contract(entry, f"topics[{n}]"),
    }
    if entry.get("key") is not None:
        key = entry["key"]
        where = f"topics[{n}].key"
        resolved["key"] = {
            **key,
            "references": _resolved(key, where),
            "contract": _contract(key, where),
        }
    return resolved


def _contract(spec: dict, where: str) -> contracts.Sent:
    """The data contract a release sends with a schema, checked as the Schema Registry
    API checks it; the gate lays it over the subject's settings as it does a
    registration's."""
    field = f"{where}.metadata"
    try:
        metadata = contracts.valid_metadata(spec.get("metadata"))
        field = f"{where}.ruleSet"
        rule_set = contracts.valid_rule_set(spec.get("ruleSet"))
    except RegistryRefused as exc:
        reason = exc.detail.removeprefix("Invalid schema: ")
        raise ContractRefused(f"{field}: {reason}", field=field) from None
    return contracts.Sent(metadata=metadata, rule_set=rule_set)


def _resolved(spec: dict, where: str) -> list:
    try:
        return resolve_references(
            spec.get("references"), spec.get("schema_type", "JSON"), lock=True
        )
    except RegistryRefused as exc:
        # The Schema Registry API words it as the reference registry's invalid schema;
        # a release hears which of its references, with Steward's code.
        reason = exc.detail.removeprefix("Invalid schema: ")
        raise ReferenceRefused(
            f"{where}.references: {reason}", field=f"{where}.references"
        ) from None
