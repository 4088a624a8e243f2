"""Deleting versions, as the Schema Registry API deletes them: soft first, then
permanently; a version its consumers read, another schema references, or a consumer's
reader schema uses, stays."""

from __future__ import annotations

from contextlib import contextmanager

from django.db import transaction
from django.db.models import ProtectedError
from django.utils import timezone

from apps.core.context import Actor
from apps.core.scope import system_scope
from apps.registry import selectors
from apps.registry.models import SchemaVersion, Topic
from apps.registry.services import NotPermitted, require_produces
from apps.registry.versions.errors import DeletionRefused
from apps.registry.versions.modes import require_writable
from apps.registry.versions.submitted import version_number
from apps.tenancy.audit import audit_record

State = SchemaVersion.State


def _read_by(version: SchemaVersion, live: list[SchemaVersion]) -> list[str]:
    """The consumers that still read the version: a topic's consumers read the latest
    live version of each role, so it is protected as a referenced one is."""
    if not live or live[-1].pk != version.pk:
        return []
    return sorted(version.topic.consumers.values_list("name", flat=True))


def _delete(actor: Actor, version: SchemaVersion, *, permanent: bool, subject: str) -> None:
    if permanent:
        audit_record(
            actor=actor,
            action="schema_version.delete_permanently",
            instance=version,
            changes={"subject": [subject, None], "version": [version.version, None]},
        )
        version.delete()
        return
    version.deleted_at = timezone.now()
    version.save(update_fields=["deleted_at"])
    audit_record(
        actor=actor,
        action="schema_version.delete",
        instance=version,
        changes={"subject": [subject, subject], "deleted_at": [None, str(version.deleted_at)]},
    )


def _require_may_delete(actor: Actor, topic: Topic) -> None:
    """As registering: on a topic that has producers, only they (and operators) delete;
    on one that has none, whoever registered what is deleted (`_require_submitted`)."""
    if topic.producers.exists():
        require_produces(actor, topic)


def _require_submitted(actor: Actor, topic: Topic, versions: list[SchemaVersion]) -> None:
    """On a topic no one produces, a service deletes only versions it registered itself:
    anyone may register there, but not take away what another service registered."""
    account = actor.service_account
    if account is None or topic.producers.exists():
        return
    others = [
        v.version
        for v in versions
        if v.submitted_by_id is None or v.submitted_by.name != account.name
    ]
    if others:
        raise NotPermitted(f"{account.name} did not register version(s) {others} of {topic.name}.")


def _locked_versions(topic: Topic, role: str) -> list[SchemaVersion]:
    return list(
        SchemaVersion.objects.select_for_update()
        .filter(topic=topic, role=role, state=State.PUBLISHED)
        .select_related("topic")
        .order_by("version")
    )


def _step_back(topic: Topic, role: str) -> None:
    """After a deletion, the topic's current version is its latest live value version."""
    if role != "value":
        return
    latest = (
        SchemaVersion.objects.filter(
            topic=topic, role=role, state=State.PUBLISHED, deleted_at__isnull=True
        )
        .order_by("version")
        .last()
    )
    number = latest.version if latest else topic.current_schema_version
    if topic.current_schema_version != number:
        topic.current_schema_version = number
        topic.save(update_fields=["current_schema_version", "updated_at"])  # drops the cache


def _referenced_refused(subject: str, versions: list[SchemaVersion]) -> None:
    """42206 when another live schema references one of the versions, or a consumer's
    reader in force uses it, soft or hard deleting alike; a soft-deleted referrer is out
    of its subject and blocks nothing, as the reference registry has it. It is still
    served by id, though, so its reference row keeps the version it needs from being
    deleted permanently (the database's PROTECT, answered 42206 by `_deleting`) until the
    referrer is deleted permanently too. A superseded reader holds nothing: its
    consumer's code no longer reads with it. Asked once the caller is known to be allowed
    to delete, so that a caller who may not learns nothing of the references."""
    held = selectors.referenced_among([v.pk for v in versions], lock=True)
    for version in versions:
        if version.pk in held:
            raise DeletionRefused(
                f"One or more references exist to the schema {{subject={subject[:300]}, "
                f"version={version.version}}}: {_held_by(held[version.pk])}.",
                registry_code=42206,
            )


def _held_by(referrers: selectors.Referrers) -> str:
    said = []
    if referrers.schema_ids:
        ids = ", ".join(str(i) for i in referrers.schema_ids)
        said.append(f"referenced by the schemas of ids {ids}")
    if referrers.readers:
        said.append(f"used by the reader schemas of {', '.join(referrers.readers)}")
    return "; ".join(said)


def _number(topic: Topic, role: str, version: str) -> int:
    """The version number the Schema Registry API's path names (`latest`: the latest
    live version's)."""
    number = version_number(version)
    if number is not None:
        return number
    found = selectors.published_versions(topic, role).last()
    if found is None:
        raise DeletionRefused(f"Version {version} not found.", registry_code=40402, status=404)
    return found.version


@contextmanager
def _deleting(subject: str):
    """The database's word on a reference made meanwhile (the check before is the rule),
    refused as the check refuses it."""
    try:
        yield
    except ProtectedError:
        raise DeletionRefused(
            f"One or more references exist to the schema {subject[:300]}.", registry_code=42206
        ) from None


def version_delete(
    *, actor: Actor, topic: Topic, role: str, version: str, subject: str, permanent: bool = False
) -> int:
    """Soft-delete a published version of a subject (`version`: its number, or `latest`),
    or (`permanent`) remove one that was soft-deleted before; audited. Neither on a
    read-only subject, nor of a version another schema or a consumer's reader in force
    references; the version the topic's consumers read is protected too: it cannot be
    deleted while they read it."""
    require_writable(topic, role, subject)
    number = _number(topic, role, version)
    _require_may_delete(actor, topic)
    with system_scope(), transaction.atomic(), _deleting(subject):
        _referenced_refused(
            subject,
            list(selectors.published_versions(topic, role, deleted=True).filter(version=number)),
        )
        versions = _locked_versions(topic, role)
        live = [v for v in versions if v.deleted_at is None]
        version = next((v for v in versions if v.version == number), None)
        if version is None:
            raise DeletionRefused(f"Version {number} not found.", registry_code=40402, status=404)
        if permanent and version.deleted_at is None:
            raise DeletionRefused(
                f"Subject '{subject}' Version {number} was not deleted first before being "
                "permanently deleted",
                registry_code=40407,
                status=404,
            )
        if not permanent and version.deleted_at is not None:
            raise DeletionRefused(
                f"Subject '{subject}' Version {number} was soft deleted.Set permanent=true to "
                "delete permanently",
                registry_code=40406,
                status=404,
            )
        _require_submitted(actor, topic, [version])
        readers = [] if permanent else _read_by(version, live)
        if readers:
            raise DeletionRefused(
                f"Subject '{subject}' Version {number} is still read by {', '.join(readers)}; "
                "a version its consumers read cannot be deleted.",
                registry_code=42206,
            )
        _delete(actor, version, permanent=permanent, subject=subject)
        _step_back(topic, role)
    return number


def subject_delete(
    *, actor: Actor, topic: Topic, role: str, subject: str, permanent: bool = False
) -> list[int]:
    """Soft-delete every version of a subject, or (`permanent`) remove a subject that was
    soft-deleted before; the version numbers deleted, each audited. Not a read-only
    subject, nor one another schema or a consumer's reader in force references; a
    subject whose topic has consumers is read by them, so it is protected too."""
    require_writable(topic, role, subject)
    _require_may_delete(actor, topic)
    with system_scope(), transaction.atomic(), _deleting(subject):
        _referenced_refused(subject, list(selectors.published_versions(topic, role, deleted=True)))
        versions = _locked_versions(topic, role)
        live = [v for v in versions if v.deleted_at is None]
        if not versions:
            raise DeletionRefused(
                f"Subject '{subject}' not found.", registry_code=40401, status=404
            )
        if permanent and live:
            raise DeletionRefused(
                f"Subject '{subject}' was not deleted first before being permanently deleted",
                registry_code=40405,
                status=404,
            )
        if not permanent and not live:
            raise DeletionRefused(
                f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently",
                registry_code=40404,
                status=404,
            )
        readers = [] if permanent else _read_by(live[-1], live)
        if readers:
            raise DeletionRefused(
                f"Subject '{subject}' is still read by {', '.join(readers)}; a subject its "
                "consumers read cannot be deleted.",
                registry_code=42206,
            )
        chosen = versions if permanent else live
        _require_submitted(actor, topic, chosen)
        for version in chosen:
            _delete(actor, version, permanent=permanent, subject=subject)
        _step_back(topic, role)
    return [v.version for v in chosen]
