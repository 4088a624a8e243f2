"""Reads of the topic catalog and the schema registry."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import cache
from django.db.models import Count, Exists, F, Max, OuterRef, Prefetch, Q, QuerySet

from apps.core.redis import REDIS_ERRORS, get_redis
from apps.registry.models import (
    Acknowledgement,
    ReaderSchema,
    RegistryDefault,
    SchemaIdentity,
    SchemaReference,
    SchemaVersion,
    Service,
    Subscription,
    Topic,
    schema_identity_key,
)
from apps.registry.news import NEWS_TOPIC_PREFIX, news_topic
from apps.registry.subjects import context_of, subject_of

logger = logging.getLogger(__name__)
TOPIC_CACHE_SECONDS = 300


@dataclass(frozen=True)
class ResolvedTopic:
    id: int
    name: str
    schema_version: int


def _cache_key(name: str) -> str:
    # The cache's own key (its prefix and version), so that test runs and deployments
    # sharing a Redis keep apart as the rest of the cache does.
    return cache.make_key(f"registry:topic:{name}")


def resolve_topic(name: str) -> ResolvedTopic | None:
    """The topic and its current schema version, or None when there is no such topic.

    Served from the cache, which registry writes invalidate (apps.registry.signals).
    The cache is an optimisation only: when Redis is away, the database answers, so
    producers keep writing to the outbox through a Redis outage.

    The entries are read and written through Steward's own Redis client, not Django's
    cache API: that builds a client per call, which cost more than the command itself
    on every emit and on every forget.
    """
    key = _cache_key(name)
    try:
        cached = get_redis().get(key)
    except REDIS_ERRORS:
        logger.warning("topic cache unavailable; resolving %s from the database", name)
        cached = None
    if cached is not None:
        topic_id, version = (int(part) for part in cached.split())
        return ResolvedTopic(topic_id, name, version)
    row = (
        Topic.objects.filter(name=name).values_list("id", "name", "current_schema_version").first()
    )
    if row is None:
        return None
    with contextlib.suppress(*REDIS_ERRORS):  # caching is best effort
        get_redis().set(key, f"{row[0]} {row[2]}", ex=TOPIC_CACHE_SECONDS)
    return ResolvedTopic(*row)


def forget_topic(name: str) -> None:
    try:
        get_redis().delete(_cache_key(name))
    except REDIS_ERRORS:  # the entry expires by itself
        logger.warning("could not invalidate the cached topic %s", name)


# --------------------------------------------------------------------------- catalog


def service_list() -> QuerySet[Service]:
    return Service.objects.all()


def topic_list() -> QuerySet[Topic]:
    return Topic.objects.prefetch_related("producers", "consumers")


def topics_named(names: Iterable[str] | None = None) -> QuerySet[Topic]:
    """The topics of those names (every topic for None), without producers or consumers."""
    topics = Topic.objects.all()
    return topics if names is None else topics.filter(name__in=names)


def topic_names() -> QuerySet:
    """Every topic's name (a flat values list)."""
    return Topic.objects.values_list("name", flat=True)


def topic_for_registering(name: str) -> Topic | None:
    """The topic of that name, with `produced`: whether it has producers (only they may
    register on it then), in the same query."""
    producers = Topic.producers.through.objects.filter(topic_id=OuterRef("pk"))
    return Topic.objects.filter(name=name).annotate(produced=Exists(producers)).first()


def topic_by_name(name: str) -> Topic | None:
    return Topic.objects.filter(name=name).first()


def subscription_list() -> QuerySet[Subscription]:
    return Subscription.objects.select_related("consumer", "topic")


def subscriptions_visible_to(actor) -> QuerySet[Subscription]:
    """The subscriptions a caller may see: a service account, its own service's only (an
    endpoint, a secret's reference and a delivery error are the consumer's business, and
    another's is answered as one that does not exist); operators and Steward, all."""
    found = subscription_list()
    account = actor.service_account
    return found if account is None else found.filter(consumer__name=account.name)


def active_subscriptions(transport: str | None = None) -> list[Subscription]:
    qs = subscription_list().filter(is_active=True)
    if transport:
        qs = qs.filter(transport=transport)
    return list(qs)


# --------------------------------------------------------------------------- schema versions


def registry_default(key: str) -> str | None:
    return RegistryDefault.objects.filter(key=key).values_list("value", flat=True).first()


def registry_defaults() -> dict:
    """Every registry-wide setting an operator made, by key, in one query: for a caller
    that needs the mode, the level and the data-contract settings (registering does)."""
    return {
        key: document if key == "contract" else value
        for key, value, document in RegistryDefault.objects.values_list("key", "value", "document")
    }


def _setting(key: str, defaults: dict[str, str] | None) -> str | None:
    return registry_default(key) if defaults is None else defaults.get(key)


def default_mode(defaults: dict[str, str] | None = None) -> str:
    """The registry's compatibility level: an operator's, else the configured default
    (`defaults`: registry_defaults() read already)."""
    return _setting("compatibility", defaults) or settings.STEWARD_REGISTRY_DEFAULT_MODE


def global_registry_mode(defaults: dict[str, str] | None = None) -> str:
    return _setting("mode", defaults) or "READWRITE"


def own_registry_mode(topic: Topic | None, role: str, defaults: dict | None = None) -> str:
    """The subject's (the topic's role's) mode as the reference's getMode(subject) answers
    it: the mode it was given itself (blank when none), unless READONLY_OVERRIDE is set
    registry-wide, which stands for every subject's."""
    registry = global_registry_mode(defaults)
    if registry == "READONLY_OVERRIDE":
        return registry
    return (topic.subject_modes or {}).get(role, "") if topic is not None else ""


def registry_mode_of(topic: Topic | None, role: str, defaults: dict | None = None) -> str:
    """The mode a subject (a topic's role) is in: READONLY_OVERRIDE set registry-wide
    wins, then the subject's own, then the registry's."""
    defaults = registry_defaults() if defaults is None else defaults
    return own_registry_mode(topic, role, defaults) or global_registry_mode(defaults)


def own_level(topic: Topic | None, role: str = "value") -> str:
    """The compatibility level the subject (the topic's role) was given itself; blank
    when none. The payload's is the topic's own level; each other role has its own."""
    if topic is None:
        return ""
    if role == "value":
        return topic.compatibility_mode
    return (topic.subject_levels or {}).get(role, "")


def mode_of(topic: Topic, defaults: dict[str, str] | None = None, role: str = "value") -> str:
    """The compatibility mode the subject's (the topic's role's) next version is checked
    in: its own, else the registry's."""
    return own_level(topic, role) or default_mode(defaults)


def registry_contract(defaults: dict | None = None) -> dict:
    """The registry-wide data-contract settings (defaultMetadata, overrideMetadata,
    defaultRuleSet, overrideRuleSet) an operator set; {} when none (`defaults`:
    registry_defaults() read already)."""
    if defaults is not None:
        return defaults.get("contract") or {}
    found = RegistryDefault.objects.filter(key="contract").values_list("document", flat=True)
    return found.first() or {}


def subject_contract(topic: Topic | None, role: str) -> dict:
    """The subject's own data-contract settings; {} when none."""
    return (topic.subject_contracts or {}).get(role, {}) if topic is not None else {}


def schema_version_list() -> QuerySet[SchemaVersion]:
    return SchemaVersion.objects.select_related("topic", "submitted_by").prefetch_related(
        "acknowledgements__consumer", "topic__consumers"
    )


def pending_versions() -> QuerySet[SchemaVersion]:
    """Versions awaiting acknowledgement, each with `awaiting_names` (the consumers that
    have not acknowledged), in a fixed number of queries."""
    return (
        SchemaVersion.objects.filter(state=SchemaVersion.State.AWAITING)
        .select_related("topic", "submitted_by")
        .prefetch_related(
            "topic__consumers",
            Prefetch(
                "acknowledgements",
                queryset=Acknowledgement.objects.filter(withdrawn_at__isnull=True).select_related(
                    "consumer"
                ),
            ),
        )
    )


def readers_in_force(topic: Topic, role: str | None = None) -> QuerySet[ReaderSchema]:
    """The reader schema in force for each consumer of the topic (of one role, or of
    each): the latest it declared. One query, whatever the number of consumers."""
    readers = ReaderSchema.objects.filter(topic=topic)
    if role is not None:
        readers = readers.filter(role=role)
    return (
        readers.select_related("service", "topic")
        .order_by("role", "service__name", "-declared_at", "-id")
        .distinct("role", "service__name")
    )


def current_readers(topic: Topic, role: str, names: Iterable[str]) -> dict[str, ReaderSchema]:
    """The reader schemas in force for the named consumers of the topic's role, by name
    (a consumer that declared none is absent)."""
    return {
        r.service.name: r for r in readers_in_force(topic, role).filter(service__name__in=names)
    }


def missing_acknowledgements(version: SchemaVersion) -> list[str]:
    """The consumers of the version's topic that have not acknowledged it, by name."""
    return version.awaiting_consumers


def published_versions(
    topic: Topic, role: str = "value", *, deleted: bool = False, deleted_only: bool = False
) -> QuerySet[SchemaVersion]:
    """The topic's published versions of one role (its payload by default), oldest first;
    soft-deleted ones only with `deleted`, and no others with `deleted_only`."""
    versions = topic.schema_versions.filter(state=SchemaVersion.State.PUBLISHED, role=role)
    if deleted_only:
        versions = versions.filter(deleted_at__isnull=False)
    elif not deleted:
        versions = versions.filter(deleted_at__isnull=True)
    return versions.order_by("version")


def latest_with_metadata(
    topic: Topic, role: str, properties: dict[str, str], *, deleted: bool = False
) -> SchemaVersion | None:
    """The subject's latest published version whose metadata properties hold each of
    `properties`, as the reference's getLatestWithMetadata finds it (a version without
    metadata matches nothing, not even no property asked); None when no version does."""
    versions = published_versions(topic, role, deleted=deleted).filter(metadata__isnull=False)
    if properties:
        versions = versions.filter(metadata__properties__contains=properties)
    return versions.last()


def published_before(version: SchemaVersion) -> SchemaVersion | None:
    """The topic's latest published version older than `version`: what it is compared with."""
    return (
        published_versions(version.topic, version.role).filter(version__lt=version.version).last()
    )


def published_version_by_id(schema_id: int) -> SchemaVersion | None:
    """A published version with that schema id (any: they share the schema and its
    references), a live one first; soft-deleted ones are still served by id."""
    return (
        SchemaVersion.objects.filter(identity_id=schema_id, state=SchemaVersion.State.PUBLISHED)
        .order_by(F("deleted_at").asc(nulls_first=True), "pk")
        .first()
    )


def max_schema_id() -> int:
    """The highest schema id a published version has (soft-deleted ones included: they
    are still served by id); 0 when there is none. The reference answers it as `maxId`
    for a client that walks every id (`fetchMaxId`)."""
    found = SchemaVersion.objects.filter(state=SchemaVersion.State.PUBLISHED).aggregate(
        top=Max("identity_id")
    )
    return found["top"] or 0


def versions_of_schema_id(schema_id: int, *, deleted: bool = False) -> list[SchemaVersion]:
    """Every published version, of any subject, whose schema has that id, in subject and
    version order (soft-deleted ones with `deleted`)."""
    versions = SchemaVersion.objects.filter(
        identity_id=schema_id, state=SchemaVersion.State.PUBLISHED
    ).select_related("topic")
    if not deleted:
        versions = versions.filter(deleted_at__isnull=True)
    return list(versions.order_by("topic__name", "role", "version"))


def schema_ids_of_guid(guid) -> dict[str, int]:
    """The schema ids with that GUID a published version has (soft-deleted ones too: they
    are still served by id), the highest in each context its subjects are in, by context
    name (`.`: the default); empty when none has."""
    rows = SchemaVersion.objects.filter(
        identity__guid=guid, state=SchemaVersion.State.PUBLISHED
    ).values_list("identity_id", "topic__name", "role")
    found: dict[str, int] = {}
    for schema_id, topic, role in rows:
        context = context_of(subject_of(topic, role))
        found[context] = max(schema_id, found.get(context, 0))
    return dict(sorted(found.items()))


def versions_answered_as(
    versions: Iterable[SchemaVersion], text: str, kind: str, references=()
) -> list[SchemaVersion]:
    """The versions among `versions` whose registry string (SchemaVersion.text) is `text`
    and whose schema id was given for the same references ((name, referenced version id)):
    what a client sending back the string the registry answered means. One query, and
    only when a string matches."""
    candidates = [v for v in versions if v.text and v.text == text]
    if not candidates:
        return []
    wanted = {
        v.identity_id: schema_identity_key(kind, v.fingerprint, references, v.contract)
        for v in candidates
    }
    keys = dict(SchemaIdentity.objects.filter(pk__in=wanted).values_list("pk", "key"))
    return [v for v in candidates if keys.get(v.identity_id) == wanted[v.identity_id]]


def subjects_with_published_versions(
    *, deleted: bool = False, deleted_only: bool = False
) -> list[tuple[str, str]]:
    """(topic name, role) of every subject with a published version (soft-deleted ones
    count with `deleted`), in name order; `deleted_only`: the subjects whose every
    published version is soft-deleted."""
    versions = SchemaVersion.objects.filter(state=SchemaVersion.State.PUBLISHED)
    if deleted_only:
        live = versions.filter(
            deleted_at__isnull=True, topic_id=OuterRef("topic_id"), role=OuterRef("role")
        )
        versions = versions.filter(deleted_at__isnull=False).exclude(Exists(live))
    elif not deleted:
        versions = versions.filter(deleted_at__isnull=True)
    return list(
        versions.order_by("topic__name", "role").values_list("topic__name", "role").distinct()
    )


def published_version_list(*, deleted: bool = False) -> QuerySet[SchemaVersion]:
    """Every published version, with its topic (soft-deleted ones with `deleted`)."""
    versions = SchemaVersion.objects.filter(state=SchemaVersion.State.PUBLISHED)
    if not deleted:
        versions = versions.filter(deleted_at__isnull=True)
    return versions.select_related("topic", "identity")


# --------------------------------------------------------------------------- schema news


@dataclass(frozen=True)
class UnreachableConsumer:
    """A consumer of a topic that schema news about the topic cannot reach: it has no
    active subscription, so it has neither a webhook nor a stream to receive its copy
    through (apps.registry.news). What unblocks it: the consumer subscribes (a webhook or
    a stream), or an operator reactivates its subscription; then a reminder re-sends a
    waiting version's news."""

    service: str
    topic: str
    # The version the news concerns: the one awaiting acknowledgement when there is one
    # (the consumer's answer holds it up), else the topic's current one.
    schema_version: int
    awaiting_acknowledgement: bool
    reason: str  # "no_subscription" | "subscriptions_inactive"
    detail: str
    service_id: int
    topic_id: int
    # The waiting version's id (its page; `versions.remind` once the consumer can hear).
    waiting_version_id: int | None = None


UNREACHABLE_REASONS = {
    "no_subscription": "{service} consumes {topic} but has no subscription: schema news "
    "about {topic} cannot reach it. Subscribe it (a webhook or a stream).",
    "subscriptions_inactive": "{service} consumes {topic} but every subscription it has is "
    "inactive: schema news about {topic} cannot reach it. Reactivate one.",
}


def unreachable_consumers() -> list[UnreachableConsumer]:
    """Every (consumer, topic) pair whose schema news reaches no one: the consumer of a
    topic with a schema version has no active subscription (on any topic but a news
    topic) to mirror for its news, by service then topic name. Three queries, whatever
    the number of rows: for the attention queue's list and its gauge."""
    pairs = list(
        Topic.consumers.through.objects.filter(topic__schema_versions__isnull=False)
        .exclude(topic__name__startswith=NEWS_TOPIC_PREFIX)
        .distinct()
        .order_by("service__name", "topic__name")
        .values_list(
            "service_id",
            "service__name",
            "topic_id",
            "topic__name",
            "topic__current_schema_version",
        )
    )
    if not pairs:
        return []
    held = (
        Subscription.objects.filter(consumer_id__in={p[0] for p in pairs})
        .exclude(topic__name__startswith=NEWS_TOPIC_PREFIX)
        .values("consumer_id")
        .annotate(total=Count("id"), active=Count("id", filter=Q(is_active=True)))
    )
    subscriptions = {row["consumer_id"]: (row["total"], row["active"]) for row in held}
    waiting = {
        topic_id: (version, pk)
        for topic_id, version, pk in SchemaVersion.objects.filter(
            topic_id__in={p[2] for p in pairs}, state=SchemaVersion.State.AWAITING, role="value"
        ).values_list("topic_id", "version", "pk")
    }
    found = []
    for service_id, service, topic_id, topic, current in pairs:
        total, active = subscriptions.get(service_id, (0, 0))
        if active:
            continue
        reason = "subscriptions_inactive" if total else "no_subscription"
        version, waiting_id = waiting.get(topic_id, (current, None))
        found.append(
            UnreachableConsumer(
                service=service,
                topic=topic,
                schema_version=version,
                awaiting_acknowledgement=waiting_id is not None,
                reason=reason,
                detail=UNREACHABLE_REASONS[reason].format(service=service, topic=topic),
                service_id=service_id,
                topic_id=topic_id,
                waiting_version_id=waiting_id,
            )
        )
    return found


def news_hearers(topic: Topic, names: Iterable[str]) -> list[str]:
    """Of the named services, those that consume the topic and have an active
    subscription on their own news topic: the addressees a copy of its news reaches, by
    name. One query, whatever the number of addressees."""
    pairs = Subscription.objects.filter(
        consumer__in=topic.consumers.filter(name__in=set(names)),
        topic__name__startswith=NEWS_TOPIC_PREFIX,
        is_active=True,
    ).values_list("consumer__name", "topic__name")
    hearing = pairs.order_by("consumer__name")
    return list(dict.fromkeys(name for name, news in hearing if news == news_topic(name)))


def news_subscriptions(service_name: str) -> QuerySet[Subscription]:
    """The subscriptions the service's schema news is delivered through."""
    return subscription_list().filter(
        consumer__name=service_name, topic__name=news_topic(service_name)
    )


# --------------------------------------------------------------------------- references

# The versions whose references still hold what they reference: a superseded or
# withdrawn version was never published and never will be.
_HOLDING = (SchemaVersion.State.PUBLISHED, SchemaVersion.State.AWAITING)


def reference_target(topic_name: str, role: str, number: int | None, *, lock: bool = False):
    """The live (published, not soft-deleted) version a reference names (`number` None:
    the latest), or None; `lock` holds it against a concurrent delete until commit."""
    versions = SchemaVersion.objects.filter(
        topic__name=topic_name,
        role=role,
        state=SchemaVersion.State.PUBLISHED,
        deleted_at__isnull=True,
    ).select_related("topic")
    if number is not None:
        versions = versions.filter(version=number)
    found = versions.order_by("version").last()
    if found is not None and lock:
        # Deleted while this waited for the lock: no longer live, so it names nothing.
        found = versions.select_for_update(of=("self",)).filter(pk=found.pk).first()
    return found


def references_of(version_ids: Iterable[int]) -> dict[int, list]:
    """Each version's references, in the order it was registered with them, with the
    referenced versions and their topics read in the same query."""
    found: dict[int, list] = {}
    rows = (
        SchemaReference.objects.filter(version_id__in=list(version_ids))
        .select_related("referenced__topic")
        .order_by("version_id", "position")
    )
    for row in rows:
        found.setdefault(row.version_id, []).append(row)
    return found


def referencing_ids(version: SchemaVersion) -> list[int]:
    """The ids of the live schemas that reference the version: a soft-deleted referrer is
    out of its subject, as the reference registry leaves it out."""
    return sorted(
        set(
            SchemaReference.objects.filter(
                referenced=version, version__state__in=_HOLDING, version__deleted_at__isnull=True
            ).values_list("version__identity_id", flat=True)
        )
    )


@dataclass(frozen=True)
class Referrers:
    """What keeps a version from being deleted: the ids of the live schemas that
    reference it, and the readers in force that use it (`service (release)`)."""

    schema_ids: list[int]
    readers: list[str]


def referenced_among(version_ids: Iterable[int], *, lock: bool = False) -> dict[int, Referrers]:
    """Of the versions given, those another schema references or a consumer's reader in
    force uses: id → who. `lock` first holds the versions until commit, as a registration
    or a reader declaration referencing one holds it (reference_target), so that a
    reference and a delete cannot pass each other."""
    ids = list(version_ids)
    if lock and ids:
        list(SchemaVersion.objects.select_for_update().filter(pk__in=ids).values_list("pk"))
    schemas: dict[int, list[int]] = {}
    rows = SchemaReference.objects.filter(
        referenced_id__in=ids, version__state__in=_HOLDING, version__deleted_at__isnull=True
    ).values_list("referenced_id", "version__identity_id")
    for referenced, referencing in rows.order_by("referenced_id", "version__identity_id"):
        if referencing not in schemas.get(referenced, []):
            schemas.setdefault(referenced, []).append(referencing)
    readers = _readers_using(ids)
    return {
        pk: Referrers(schemas.get(pk, []), readers.get(pk, []))
        for pk in ids
        if pk in schemas or pk in readers
    }


def _readers_using(version_ids: list[int]) -> dict[int, list[str]]:
    """The versions that a reader in force (the latest its consumer declared, while the
    service still consumes the topic) names in its references: id → `service (release)`.
    A reader's references are kept by subject and number, as it declared them, not as
    rows: a superseded declaration is history and holds nothing."""
    versions = SchemaVersion.objects.filter(pk__in=version_ids)
    named = {
        (subject_of(topic, role), number): pk
        for pk, topic, role, number in versions.values_list("pk", "topic__name", "role", "version")
    }
    if not named:
        return {}
    uses = Q()
    for subject, number in named:
        uses |= Q(references__contains=[{"subject": subject, "version": number}])
    newer = ReaderSchema.objects.filter(
        Q(declared_at__gt=OuterRef("declared_at"))
        | Q(declared_at=OuterRef("declared_at"), pk__gt=OuterRef("pk")),
        service=OuterRef("service"),
        topic=OuterRef("topic"),
        role=OuterRef("role"),
    )
    rows = (
        ReaderSchema.objects.filter(uses, topic__consumers=F("service"))
        .exclude(Exists(newer))
        .values_list("service__name", "release", "references")
        .order_by("service__name", "release")
    )
    found: dict[int, list[str]] = {}
    for service, release, references in rows:
        for reference in references:
            pk = named.get((reference["subject"], reference["version"]))
            reader = f"{service} ({release})"
            if pk is not None and reader not in found.get(pk, []):
                found.setdefault(pk, []).append(reader)
    return found
