"""Compatibility levels, Schema Registry modes and data-contract settings: each
subject's own (a topic's role's), and the registry's defaults; a lowered level is news to
the consumers it concerns.

A subject's are its topic's producers' and operators' to change, the registry's an
operator's; a service account whose token has the `registry:admin` scope (an operator's
grant) may change both, as schema tooling does against the reference registry."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction

from apps.core.context import Actor
from apps.core.scope import system_scope
from apps.registry.models import RegistryDefault, SchemaVersion, Topic
from apps.registry.selectors import (
    mode_of,
    own_registry_mode,
    registry_contract,
    registry_mode_of,
    subject_contract,
    subjects_with_published_versions,
    topic_by_name,
)
from apps.registry.services import (
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


def require_may_manage(actor: Actor, topic: Topic | None, registry_admin: bool) -> None:
    """Who changes a subject's settings (`topic` None: the registry's): a `registry:admin`
    token's service account, else the topic's producers and operators (the registry's:
    operators only)."""
    if registry_admin:
        return
    if topic is None:
        require_operator(actor)
    else:
        require_produces(actor, topic)


def set_mode(
    *, actor: Actor, topic: Topic, mode: str, role: str = "value", registry_admin: bool = False
) -> Topic:
    """A subject's compatibility level (the topic's role's; it applies to the next version
    submitted; blank: back to the registry's): its producers' and operators' to change.
    Each role has its own: the payload's is the topic's level. Lowering it (a mode that
    checks less than before) on a topic that has consumers is audited as such and
    announced to them (TopicCompatibilityLowered); it publishes and supersedes nothing."""
    require_may_manage(actor, topic, registry_admin)
    before = mode_of(topic, role=role)
    if role == "value":
        topic.compatibility_mode = mode
        topic.full_clean()
    with system_scope(), transaction.atomic():
        if role == "value":
            topic.save(update_fields=["compatibility_mode", "updated_at"])
        else:
            topic = Topic.objects.select_for_update().get(pk=topic.pk)
            topic.subject_levels = _with(topic.subject_levels, role, mode)
            topic.save(update_fields=["subject_levels", "updated_at"])
        after = mode_of(topic, role=role)
        consumers = sorted(topic.consumers.values_list("name", flat=True))
        lowered = bool(consumers) and not mode_implies(after, before)
        changes = {"compatibility_mode": [before, mode]}
        audit_record(
            actor=actor,
            action="topic.compatibility_lowered" if lowered else "topic.compatibility",
            instance=topic,
            changes=changes if role == "value" else {**changes, "role": [role, role]},
        )
        if lowered:
            announce_lowering(actor, topic, before, after, consumers)
    return topic


def policy_implies(policy: str, other: str) -> bool:
    """Whether a check under `policy` refuses everything one under `other` refuses: STRICT
    allows a subset of what LENIENT allows (registry-compatibility.md)."""
    return policy == other or policy == "STRICT"


def set_policy(*, actor: Actor, topic: Topic, policy: str) -> Topic:
    """The topic's compatibility policy (STRICT or LENIENT: how its JSON Schema versions
    are judged; Avro's and Protobuf's rules have none), changed by whoever changes its
    level: its producers and operators. It lives on Steward's side only (the reference
    registry has no such setting), so a `registry:admin` grant, which is for the Schema
    Registry API's tooling, does not change it.

    It applies to the next version submitted and to reader verdicts judged from then on;
    a version waiting for acknowledgement keeps the verdict it was announced with, as it
    does when a level changes (gate._held_by_waiting keeps a newer version from replacing
    it past that verdict). Lowering it (STRICT to LENIENT) on a topic with consumers is
    audited as such and announced to them (TopicCompatibilityLowered, `setting`
    "policy")."""
    require_produces(actor, topic)
    with system_scope(), transaction.atomic():
        topic = Topic.objects.select_for_update().get(pk=topic.pk)
        before = topic.compatibility_policy
        topic.compatibility_policy = policy
        topic.full_clean()
        if before == policy:
            return topic
        topic.save(update_fields=["compatibility_policy", "updated_at"])
        consumers = sorted(topic.consumers.values_list("name", flat=True))
        lowered = bool(consumers) and not policy_implies(policy, before)
        audit_record(
            actor=actor,
            action="topic.compatibility_lowered" if lowered else "topic.compatibility_policy",
            instance=topic,
            changes={"compatibility_policy": [before, policy]},
        )
        if lowered:
            announce_lowering(actor, topic, before, policy, consumers, setting="policy")
    return topic


def _with(settings_by_role: dict | None, role: str, value) -> dict:
    """The roles' settings with the role's set (a blank or None value: removed)."""
    changed = dict(settings_by_role or {})
    if value:
        changed[role] = value
    else:
        changed.pop(role, None)
    return changed


# --------------------------------------------------------------------------- registry settings


def set_registry_default(
    *,
    actor: Actor,
    key: str,
    value: str | None,
    registry_admin: bool = False,
    force: bool = False,
) -> str | None:
    """The registry-wide compatibility level or mode (None: back to the configured
    default); operators (and `registry_admin`) only, audited. A lowered level is announced
    on each topic that has consumers and no level of its own. IMPORT only on a registry
    with no live subject yet, unless `force`, as the reference rules it (42205)."""
    require_may_manage(actor, None, registry_admin)
    with system_scope(), transaction.atomic():
        row = RegistryDefault.objects.select_for_update().filter(key=key).first()
        before = row.value if row else None
        importing = key == "mode" and value == "IMPORT" and before != "IMPORT"
        if importing and not force and subjects_with_published_versions():
            raise RegistryRefused(
                "Cannot import since found existing subjects; set force=true to import "
                "into the registry anyway."
            )
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
    *,
    actor: Actor,
    topic: Topic,
    role: str,
    mode: str,
    force: bool = False,
    registry_admin: bool = False,
) -> str:
    """A subject's Schema Registry mode (the topic's role; blank: back to the
    registry's); the topic's producers and operators only, audited. IMPORT, unless the
    subject is in IMPORT already or `force`, only on a subject with no live version: as the
    reference rules it, soft-deleted versions do not count, nor do versions that were never
    published (superseded or withdrawn while awaiting acknowledgement)."""
    require_may_manage(actor, topic, registry_admin)
    importing = mode == "IMPORT" and registry_mode_of(topic, role) != "IMPORT"
    live = topic.schema_versions.filter(
        role=role,
        deleted_at__isnull=True,
        state__in=(SchemaVersion.State.PUBLISHED, SchemaVersion.State.AWAITING),
    )
    if importing and not force and live.exists():
        raise RegistryRefused(
            f"Cannot import since found existing subjects for {topic.name} ({role}); set "
            "force=true to import into it anyway."
        )
    with system_scope(), transaction.atomic():
        topic = Topic.objects.select_for_update().get(pk=topic.pk)
        before = (topic.subject_modes or {}).get(role, "")
        topic.subject_modes = _with(topic.subject_modes, role, mode)
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


def subject_topic(*, actor: Actor, subject: Subject, registry_admin: bool = False) -> Topic:
    """The subject's topic, to set a setting of the subject on; created, by an operator or
    a `registry_admin` only (anyone else: NotPermitted, 40301, as on a topic that exists),
    when the subject has none yet (a migration sets the mode of a subject it is about to
    import; tooling sets a level before the first schema)."""
    topic = topic_by_name(subject.topic)
    if topic is None:
        require_may_manage(actor, None, registry_admin)
        topic = topic_create(actor=actor, name=subject.topic)
    return topic


def subject_mode_set(
    *,
    actor: Actor,
    subject: Subject,
    mode: str,
    force: bool = False,
    registry_admin: bool = False,
) -> str:
    """A subject's Schema Registry mode (set_registry_mode), on its topic (subject_topic)."""
    topic = subject_topic(actor=actor, subject=subject, registry_admin=registry_admin)
    return set_registry_mode(
        actor=actor,
        topic=topic,
        role=subject.role,
        mode=mode,
        force=force,
        registry_admin=registry_admin,
    )


def subject_mode_clear(*, actor: Actor, subject: Subject, registry_admin: bool = False) -> str:
    """A subject's own Schema Registry mode removed, by those who may set it (the subject
    follows the registry's again): the mode it had; "" when it had none, and nothing
    changes."""
    topic = topic_by_name(subject.topic)
    require_may_manage(actor, topic, registry_admin)
    before = own_registry_mode(topic, subject.role)
    if before:
        set_registry_mode(
            actor=actor, topic=topic, role=subject.role, mode="", registry_admin=registry_admin
        )
    return before


# --------------------------------------------------------------------------- data contracts


def set_contract_config(
    *,
    actor: Actor,
    topic: Topic | None,
    role: str = "value",
    values: dict | None,
    registry_admin: bool = False,
) -> dict:
    """The data-contract settings (contracts.CONFIG_KEYS) of a subject, or (`topic` None)
    of the registry: the keys given set (a None value clears one), the others kept;
    `values` None clears them all. Audited; the settings now in force answered."""
    require_may_manage(actor, topic, registry_admin)
    with system_scope(), transaction.atomic():
        if topic is None:
            row = RegistryDefault.objects.select_for_update().filter(key="contract").first()
            before = registry_contract()
        else:
            topic = Topic.objects.select_for_update().get(pk=topic.pk)
            before = subject_contract(topic, role)
        after = {} if values is None else {**before, **values}
        after = {k: v for k, v in after.items() if v is not None}
        if topic is None:
            if row is None and after:
                row = RegistryDefault.objects.create(key="contract", value="", document=after)
            elif row is not None and after:
                row.document = after
                row.save(update_fields=["document", "updated_at"])
            elif row is not None:
                row.delete()
            instance = row or RegistryDefault(key="contract", value="")
        else:
            topic.subject_contracts = _with(topic.subject_contracts, role, after)
            topic.save(update_fields=["subject_contracts", "updated_at"])
            instance = topic
        audit_record(
            actor=actor,
            action="registry.contract" if topic is None else "topic.contract",
            instance=instance,
            changes={"contract": [before, after], **({"role": [role, role]} if topic else {})},
        )
    return after
