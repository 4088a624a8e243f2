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
from apps.registry.versions.declarations import sync_reader
from apps.registry.versions.gate import Sync, sync_topic
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
        declared = [sync_reader(actor, service, release, entry) for entry in reads or ()]
        sync = Sync(actor=actor, service=service, release=release, topics=topics)
        for entry in topics:
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
