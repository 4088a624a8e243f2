"""A waiting version's way out: consumers' acknowledgements, an operator's override,
the producer's withdrawal, reminders; and publication, which makes a version its
topic's current one and announces it."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.errors import InvalidTransition, ValidationFailed
from apps.core.scope import system_scope
from apps.registry.codes import RegistryCode
from apps.registry.models import Acknowledgement, SchemaVersion, Service, Topic
from apps.registry.news import AWAITING, PUBLISHED, WITHDRAWN
from apps.registry.selectors import missing_acknowledgements, published_before
from apps.registry.services import NotPermitted, require_produces, require_speaks_for
from apps.registry.versions.announcements import announce
from apps.registry.versions.contracts import rules_changed
from apps.tenancy.audit import audit_record

State = SchemaVersion.State
TRANSITIONS = SchemaVersion.TRANSITIONS


def publish(version: SchemaVersion, *, override_reason: str = "") -> SchemaVersion:
    """Awaiting → published, once: its callers hold the version locked (lock_waiting),
    so two acknowledgements racing to publish it decide one after the other."""
    TRANSITIONS.move(
        version,
        State.PUBLISHED,
        detail=_not_waiting(version),
        published_at=timezone.now(),
        override_reason=override_reason,
    )
    make_current(version, Topic.objects.select_for_update().get(pk=version.topic_id))
    return version


def make_current(version: SchemaVersion, topic: Topic) -> None:
    """The topic's current version becomes this published one, announced. Only the
    payload's (value) versions number the events Steward carries; a key's or a record's
    version is announced and leaves the topic's current version alone."""
    # A new topic's row holds its first version as current already (the field's default)
    if version.role == "value" and topic.current_schema_version != version.version:
        topic.current_schema_version = version.version
        topic.save(update_fields=["current_schema_version", "updated_at"])  # drops the cache
    version.topic = topic
    # A version whose data-contract rules differ from the one before is news to its
    # consumers as a schema change is: their clients run those rules.
    changed = version.rule_set is not None and rules_changed(version, published_before(version))
    announce(
        version,
        PUBLISHED,
        override_reason=version.override_reason or None,
        **({"rules_changed": True} if changed else {}),
    )


# --------------------------------------------------------------------------- acknowledgements


def _not_waiting(version: SchemaVersion):
    """The refusal's wording for a version found in `state`, not waiting."""
    return lambda state: (
        f"Version {version.version} of {version.topic.name} is {state}, "
        "not awaiting acknowledgement."
    )


def _locked(version: SchemaVersion) -> SchemaVersion:
    return SchemaVersion.objects.select_for_update().select_related("topic").get(pk=version.pk)


def lock_waiting(version: SchemaVersion) -> SchemaVersion:
    """The version, locked, if it still waits: acknowledgements, reminders and
    overrides all lead to publication, which only a waiting version has ahead. Refused
    as the mover refuses a move to publication."""
    version = _locked(version)
    if version.state not in TRANSITIONS.sources(State.PUBLISHED):
        raise InvalidTransition(_not_waiting(version)(version.state), status=version.state)
    return version


def require_may_override(actor: Actor) -> None:
    """Publishing without the missing acknowledgements is an operator's decision and
    needs the override_schemaversion permission; Steward itself (neither a person nor a
    token: set-up, the shell) may."""
    user = actor.user
    if actor.service_account is not None or (user is not None and not user.is_operator):
        raise NotPermitted("Only an operator may override.")
    if user is not None and not user.has_perm("registry.override_schemaversion"):
        raise NotPermitted("Overriding needs the override_schemaversion permission.")


def acknowledge(*, actor: Actor, version: SchemaVersion, consumer: Service) -> SchemaVersion:
    """Record the consumer's acknowledgement; the last one required publishes the
    version (exactly once: the version row is locked while deciding). A service
    acknowledges for itself only."""
    require_speaks_for(actor, consumer.name)
    with system_scope(), transaction.atomic():
        version = lock_waiting(version)
        if not version.topic.consumers.filter(pk=consumer.pk).exists():
            raise ValidationFailed(
                f"{consumer.name} does not consume {version.topic.name}.",
                code=RegistryCode.NOT_A_CONSUMER,
            )
        _, created = Acknowledgement.objects.get_or_create(
            version=version,
            consumer=consumer,
            withdrawn_at=None,
            defaults={"acknowledged_by": actor.label[:150]},
        )
        if created:
            audit_record(
                actor=actor,
                action="schema_version.acknowledge",
                instance=version,
                changes={"acknowledged_by": [None, consumer.name]},
            )
        if not missing_acknowledgements(version):
            version = publish(version)
    return version


def withdraw_acknowledgement(
    *, actor: Actor, version: SchemaVersion, consumer: Service
) -> SchemaVersion:
    """Take an acknowledgement back while the version still waits (for itself only)."""
    require_speaks_for(actor, consumer.name)
    with system_scope(), transaction.atomic():
        version = lock_waiting(version)
        withdrawn = Acknowledgement.objects.filter(
            version=version, consumer=consumer, withdrawn_at__isnull=True
        ).update(withdrawn_at=timezone.now())
        if withdrawn:
            audit_record(
                actor=actor,
                action="schema_version.withdraw_acknowledgement",
                instance=version,
                changes={"acknowledged_by": [consumer.name, None]},
            )
    return version


def override(*, actor: Actor, version: SchemaVersion, reason: str) -> SchemaVersion:
    """Publish a waiting version without the missing acknowledgements (audited)."""
    require_may_override(actor)
    if not reason.strip():
        raise ValidationFailed("An override needs a reason.", code=CoreCode.REASON_REQUIRED)
    with system_scope(), transaction.atomic():
        version = lock_waiting(version)
        missing = missing_acknowledgements(version)
        version = publish(version, override_reason=reason)
        audit_record(
            actor=actor,
            action="schema_version.override",
            instance=version,
            changes={"state": [State.AWAITING, State.PUBLISHED], "missing": [missing, None]},
        )
    return version


def withdraw_version(*, actor: Actor, version: SchemaVersion, reason: str = "") -> SchemaVersion:
    """The producer (or an operator) takes a waiting version back: it is never
    published (a later release may submit another)."""
    require_produces(actor, version.topic)
    with system_scope(), transaction.atomic():
        version = TRANSITIONS.move(_locked(version), State.WITHDRAWN, detail=_not_waiting(version))
        audit_record(
            actor=actor,
            action="schema_version.withdraw",
            instance=version,
            changes={"state": [State.AWAITING, State.WITHDRAWN], "reason": [None, reason]},
        )
        # Every consumer hears of it, those that acknowledged it included: they may have
        # prepared a release for a version that will now never be published.
        announce(version, WITHDRAWN, reason=reason or None)
    return version


def remind(*, actor: Actor, version: SchemaVersion) -> list[str]:
    """Announce the waiting version again to the consumers that have not acknowledged:
    the producer's (or an operator's) nudge, not anyone's way to flood another
    service's consumers with its news."""
    require_produces(actor, version.topic)
    with system_scope(), transaction.atomic():
        version = lock_waiting(version)
        missing = missing_acknowledgements(version)
        if missing:
            # Only to the consumers still awaited: the others have answered.
            announce(version, AWAITING, awaiting=missing, reminder=True, addressees=missing)
            audit_record(
                actor=actor,
                action="schema_version.remind",
                instance=version,
                changes={"reminded": [None, missing]},
            )
    return missing
