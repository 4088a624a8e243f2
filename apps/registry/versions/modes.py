"""Compatibility levels and Schema Registry modes: a topic's own, and the registry's
defaults; a lowered level is news to the consumers it concerns."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from apps.core.context import Actor
from apps.core.scope import system_scope
from apps.registry.models import RegistryDefault, Topic
from apps.registry.selectors import mode_of, registry_mode_of, topic_by_name
from apps.registry.services import (
    NotPermitted,
    require_operator,
    require_produces,
    topic_create,
)
from apps.registry.subjects import Subject
from apps.registry.versions.announcements import announce_lowering
from apps.registry.versions.errors import RegistryRefused
from apps.tenancy.audit import audit_record


def _directions(mode: str) -> set[str]:
    mode = mode.removesuffix("_TRANSITIVE")
    return {"NONE": set(), "BACKWARD": {"b"}, "FORWARD": {"f"}, "FULL": {"b", "f"}}[mode]


def mode_implies(mode: str, other: str) -> bool:
    """Whether a check in `mode` makes every check `other` makes: BACKWARD does not
    imply FORWARD, FULL implies both, a transitive mode its plain one, NONE nothing."""
    wanted = _directions(other)
    if not wanted <= _directions(mode):
        return False
    return not wanted or mode.endswith("_TRANSITIVE") or not other.endswith("_TRANSITIVE")


def set_mode(*, actor: Actor, topic: Topic, mode: str) -> Topic:
    """A topic's compatibility mode (it applies to the next version submitted): its
    producers' and operators' to change. Lowering it (a mode that checks less than
    before) on a topic that has consumers is audited as such and announced to them
    (TopicCompatibilityLowered); it publishes and supersedes nothing."""
    require_produces(actor, topic)
    before = mode_of(topic)
    topic.compatibility_mode = mode
    topic.full_clean()
    with system_scope(), transaction.atomic():
        topic.save(update_fields=["compatibility_mode", "updated_at"])
        consumers = sorted(topic.consumers.values_list("name", flat=True))
        lowered = bool(consumers) and not mode_implies(mode_of(topic), before)
        audit_record(
            actor=actor,
            action="topic.compatibility_lowered" if lowered else "topic.compatibility",
            instance=topic,
            changes={"compatibility_mode": [before, mode]},
        )
        if lowered:
            announce_lowering(actor, topic, before, mode_of(topic), consumers)
    return topic


# --------------------------------------------------------------------------- registry settings


def set_registry_default(*, actor: Actor, key: str, value: str | None) -> str | None:
    """The registry-wide compatibility level or mode (None: back to the configured
    default); operators only, audited. A lowered level is announced on each topic that
    has consumers and no level of its own."""
    require_operator(actor)
    with system_scope(), transaction.atomic():
        row = RegistryDefault.objects.select_for_update().filter(key=key).first()
        before = row.value if row else None
        if value is None:
            if row is not None:
                row.delete()
        elif row is None:
            row = RegistryDefault.objects.create(key=key, value=value)
        else:
            row.value = value
            row.save(update_fields=["value", "updated_at"])
        audit_record(
            actor=actor,
            action=f"registry.{key}",
            instance=row or RegistryDefault(key=key, value=""),
            changes={key: [before, value]},
        )
        if key == "compatibility":
            old = before or settings.STEWARD_REGISTRY_DEFAULT_MODE
            new = value or settings.STEWARD_REGISTRY_DEFAULT_MODE
            if not mode_implies(new, old):
                for topic in Topic.objects.filter(compatibility_mode="").prefetch_related(
                    "consumers"
                ):
                    _announce_lowered(actor, topic, old, new)
    return before


def _announce_lowered(actor: Actor, topic: Topic, before: str, after: str) -> None:
    consumers = sorted(c.name for c in topic.consumers.all())
    if not consumers:
        return
    audit_record(
        actor=actor,
        action="topic.compatibility_lowered",
        instance=topic,
        changes={"compatibility_mode": [before, after]},
    )
    announce_lowering(actor, topic, before, after, consumers)


def set_registry_mode(
    *, actor: Actor, topic: Topic, role: str, mode: str, force: bool = False
) -> str:
    """A subject's Schema Registry mode (the topic's role; blank: back to the
    registry's); the topic's producers and operators only, audited. IMPORT only on a
    subject with no version yet, unless `force`."""
    require_produces(actor, topic)
    if mode == "IMPORT" and not force and topic.schema_versions.filter(role=role).exists():
        raise RegistryRefused(
            f"Cannot import since found existing subjects for {topic.name} ({role}); set "
            "force=true to import into it anyway."
        )
    with system_scope(), transaction.atomic():
        topic = Topic.objects.select_for_update().get(pk=topic.pk)
        modes = dict(topic.subject_modes or {})
        before = modes.get(role, "")
        if mode:
            modes[role] = mode
        else:
            modes.pop(role, None)
        topic.subject_modes = modes
        topic.save(update_fields=["subject_modes", "updated_at"])
        audit_record(
            actor=actor,
            action="topic.registry_mode",
            instance=topic,
            changes={"registry_mode": [before, mode], "role": [role, role]},
        )
    return mode


def require_writable(topic: Topic | None, role: str, subject: str, defaults=None) -> str:
    """The subject's Schema Registry mode, when it lets a schema be written or deleted
    (refused, 42205, when read-only)."""
    mode = registry_mode_of(topic, role, defaults)
    if mode in ("READONLY", "READONLY_OVERRIDE"):
        raise RegistryRefused(f"Subject {subject[:300]} is in read-only mode")
    return mode


def subject_mode_set(*, actor: Actor, subject: Subject, mode: str, force: bool = False) -> str:
    """A subject's Schema Registry mode (set_registry_mode); its topic is created, by an
    operator only, when a migration sets the mode of a subject it is about to import."""
    topic = topic_by_name(subject.topic)
    if topic is None:
        try:
            require_operator(actor)
        except NotPermitted:
            raise RegistryRefused(
                f"Subject '{subject.name[:300]}' not found.", registry_code=40401, status=404
            ) from None
        topic = topic_create(actor=actor, name=subject.topic)
    return set_registry_mode(actor=actor, topic=topic, role=subject.role, mode=mode, force=force)
