"""Schema versions: ModelSync, the compatibility gate and consumer acknowledgements.

A release's ModelSync names topics, their producers and consumers, and a payload
schema per topic. Per topic, all or nothing: the same schema as the current one is
`unchanged`; a compatible one is published at once; a breaking one waits, as the
topic's one pending version, until every consumer of the topic has acknowledged it
(or an operator overrides, with a reason). Publication moves the topic's current
version, which producers' topic resolution sees at once (the topic cache is dropped
on save), and announces SchemaVersionPublished.
"""

from __future__ import annotations

import hashlib
import json
from contextlib import nullcontext
from dataclasses import dataclass, field

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR, Actor
from apps.core.errors import Conflict, DomainError, ValidationFailed
from apps.core.outbox import NewEvent, emit, emit_many
from apps.core.scope import current_scope, system_scope
from apps.registry import compatibility, schema_types
from apps.registry.catalog import STEWARD_TOPICS
from apps.registry.models import (
    Acknowledgement,
    ModelSync,
    ReaderSchema,
    RegistryDefault,
    SchemaIdentity,
    SchemaVersion,
    Service,
    Topic,
    schema_identity_key,
)
from apps.registry.news import AWAITING, LOWERED, PUBLISHED, WITHDRAWN, news_topic
from apps.registry.selectors import (
    current_readers,
    missing_acknowledgements,
    mode_of,
    registry_defaults,
    versions_answered_as,
)
from apps.registry.services import (
    NotPermitted,
    news_delivery_sync,
    require_operator,
    require_produces,
    require_speaks_for,
    service_ensure,
    subscribe_steward_consumers_on_commit,
)
from apps.registry.subjects import TOPIC as TOPIC_NAME
from apps.tenancy.audit import audit_record

TOPIC = "registry.schema"
State = SchemaVersion.State
TRANSITIONS = SchemaVersion.TRANSITIONS


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
            _announce_lowering(actor, topic, before, mode_of(topic), consumers)
    return topic


def _announce(
    version: SchemaVersion, event_type: str, *, addressees: list[str] | None = None, **payload
) -> None:
    """Announce news of the version: once on the shared topic, for observers, and once to
    each addressee (every consumer of the topic unless named), on its own news topic
    (apps.registry.news). A consumer with no subscription to receive it gets no copy; it
    is listed by `selectors.unreachable_consumers` instead, for an operator."""
    topic = version.topic
    consumers = getattr(topic, "consumer_names", None)
    if consumers is None:  # [] is a sync's word that the topic has none
        consumers = sorted(topic.consumers.values_list("name", flat=True))
    body = {
        "topic": topic.name,
        "version": version.version,
        "fingerprint": version.fingerprint,
        "verdict": version.verdict,
        "consumers": consumers,
        **({"role": version.role} if version.role != "value" else {}),
        **payload,
    }
    readers = version.verdict.get("readers") if isinstance(version.verdict, dict) else None
    if readers:
        # Who need not act, said outright: a consumer reading the news should not have to
        # dig through the verdict to learn that its reader reads the version.
        body["reads_it"] = version.reads_it
    shared = emit(
        topic=TOPIC,
        event_type=event_type,
        aggregate_type="topic",
        aggregate_id=topic.name,
        payload=body,
    )
    _address(
        topic,
        event_type,
        body,
        consumers if addressees is None else addressees,
        shared,
        readers=readers,
    )


def _address(
    topic: Topic, event_type: str, body: dict, addressees, shared, *, readers: dict | None = None
) -> None:
    """One copy of the announcement `shared` to each addressee that consumes the topic
    and has a subscription to receive it, on its own news topic. With `readers` (the
    per-consumer verdicts of a breaking version), each copy carries its addressee's own
    verdict as `reader`, so the consumer learns at once whether it must act."""
    copies = [
        NewEvent(
            topic=news_topic(service.name),
            event_type=event_type,
            # The schema's topic is the aggregate, as on the shared topic: all news of one
            # topic leaves in one lane, in the order it was written, to every addressee.
            aggregate_type="topic",
            aggregate_id=topic.name,
            payload={
                **body,
                "addressee": service.name,
                **({"reader": readers.get(service.name, NO_READER)} if readers else {}),
            },
            # Ties each copy to the one announcement observers saw.
            causation_id=str(shared.event_id),
        )
        for service in topic.consumers.filter(name__in=set(addressees)).order_by("name")
        if news_delivery_sync(actor=SYSTEM_ACTOR, consumer=service)
    ]
    if copies:
        emit_many(copies)


def _publish(version: SchemaVersion, *, override_reason: str = "") -> SchemaVersion:
    """Awaiting → published, once: conditional on the state it was in."""
    now = timezone.now()
    updated = SchemaVersion.objects.filter(
        pk=version.pk, state__in=TRANSITIONS.sources(State.PUBLISHED)
    ).update(state=State.PUBLISHED, published_at=now, override_reason=override_reason)
    if not updated:
        version.refresh_from_db()
        return version
    version.state, version.published_at, version.override_reason = (
        State.PUBLISHED,
        now,
        override_reason,
    )
    _make_current(version, Topic.objects.select_for_update().get(pk=version.topic_id))
    return version


def _make_current(version: SchemaVersion, topic: Topic) -> None:
    """The topic's current version becomes this published one, announced. Only the
    payload's (value) versions number the events Steward carries; a key's or a record's
    version is announced and leaves the topic's current version alone."""
    # A new topic's row holds its first version as current already (the field's default)
    if version.role == "value" and topic.current_schema_version != version.version:
        topic.current_schema_version = version.version
        topic.save(update_fields=["current_schema_version", "updated_at"])  # drops the cache
    version.topic = topic
    _announce(version, PUBLISHED, override_reason=version.override_reason or None)


# --------------------------------------------------------------------------- ModelSync


@dataclass
class TopicAnswer:
    topic: str
    outcome: str  # published, unchanged, awaiting_acknowledgement, rejected, refused
    version: int | None = None
    fingerprint: str = ""
    reason: str = ""
    awaiting: list[str] = field(default_factory=list)
    verdict: dict = field(default_factory=dict)
    not_named: dict = field(default_factory=dict)
    reads_it: list[str] = field(default_factory=list)
    # The version the answer names, for callers in the process (never in the answer).
    row: SchemaVersion | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict:
        answer = {"topic": self.topic, "outcome": self.outcome}
        for name in (
            "version",
            "fingerprint",
            "reason",
            "awaiting",
            "reads_it",
            "verdict",
            "not_named",
        ):
            value = getattr(self, name)
            if value not in (None, "", [], {}):
                answer[name] = value
        return answer


class _Sync:
    """What one ModelSync reads once for all its topics: the services it names, and the
    topics with their producers and consumers."""

    def __init__(
        self,
        *,
        actor: Actor,
        service: Service,
        release: str,
        topics: list[dict],
        catalog: bool = True,
        defaults: dict[str, str] | None = None,
        absent: bool = False,
    ):
        """`catalog=False`: the sync names no producer and reports none it leaves out
        (the Schema Registry API's register), so the topics' producers are not read.
        `defaults`: the registry-wide settings (selectors.registry_defaults), when the
        caller read them already. `absent`: the caller has just read, in this
        transaction, that none of the topics exists, so there is nothing to read or
        lock: one a concurrent sync creates meanwhile is this one's IntegrityError (a
        sync_conflict), as it is when it commits between the read here and the insert."""
        self.actor, self.service, self.release = actor, service, release
        self.catalog, self._defaults = catalog, defaults
        names = set()
        for entry in topics:
            names.update(entry.get("producers", []), entry.get("consumers", []))
        names.discard(service.name)
        self.services = {service.name: service}
        if names:
            self.services.update((s.name, s) for s in Service.objects.filter(name__in=names))
        for name in names - set(self.services):
            self.services[name] = service_ensure(actor=actor, name=name)
        # Locked for this sync (one sync per topic at a time), in name order so that two
        # syncs of the same topics cannot wait on each other; read once, with their
        # producers and consumers.
        self.topics = (
            {}
            if absent
            else {
                t.name: t
                for t in Topic.objects.filter(name__in=[e["name"] for e in topics])
                .order_by("name")
                .select_for_update(of=("self",))
                .prefetch_related(*(("producers", "consumers") if catalog else ("consumers",)))
            }
        )

    def mode_of(self, topic: Topic) -> str:
        """The topic's compatibility level, the registry's read once for the whole sync
        (not once per topic that follows it)."""
        if not topic.compatibility_mode and self._defaults is None:
            self._defaults = registry_defaults()
        return mode_of(topic, self._defaults)

    def topic(self, entry: dict) -> Topic:
        """The topic locked for this sync (one sync per topic at a time), created if new,
        with the producers and consumers the entry names added."""
        name = entry["name"]
        known = self.topics.get(name)
        if known is None:
            topic = Topic(name=name, description=entry.get("description", ""))
            # Not unique: the sync has just read that no topic has the name (a concurrent
            # creator's row is an IntegrityError, a sync_conflict). The name's rule is
            # the database's constraint, asked of the database only when Python's copy of
            # it fails, so that the refusal is worded as full_clean words it.
            topic.full_clean(validate_unique=False, validate_constraints=False)
            if not TOPIC_NAME.match(name):
                topic.validate_constraints()
            topic.save()
            audit_record(actor=self.actor, action="topic.create", instance=topic)
            subscribe_steward_consumers_on_commit([name])
            producers, consumers = set(), set()
            topic.is_new = True  # no schema version yet, under any role
        else:
            topic = known
            producers = {p.name for p in known.producers.all()} if self.catalog else set()
            consumers = {c.name for c in known.consumers.all()}
        wanted = entry.get("producers", [self.service.name])
        topic.producers.add(*[self.services[n] for n in wanted if n not in producers])
        named_consumers = entry.get("consumers", [])
        topic.consumers.add(*[self.services[n] for n in named_consumers if n not in consumers])
        topic.consumer_names = sorted(consumers | set(named_consumers))
        # Reported, never removed: a release may just not mention everyone.
        topic.not_named = {
            "producers": sorted(producers - set(wanted)),
            "consumers": sorted(consumers - set(named_consumers)),
        }
        return topic


def _sync_topic(sync: _Sync, entry: dict, parsed=None) -> TopicAnswer:
    """One topic of a sync, all or nothing (its own savepoint); `parsed`, the entry's
    schema when the caller parsed it already."""
    try:
        with transaction.atomic():
            return _decide_entry(sync, entry, parsed)
    except IntegrityError:  # a concurrent sync created the same topic or version
        # Not an answer to keep for this release: the caller retries it whole.
        raise Conflict(
            f"Another sync changed {entry['name']} at the same moment; send this release again.",
            code="sync_conflict",
        ) from None


def _decide_entry(sync: _Sync, entry: dict, parsed=None) -> TopicAnswer:
    name = entry["name"]
    if parsed is None:
        try:
            parsed = schema_types.parse(entry.get("schema_type", "JSON"), entry["schema"])
        except compatibility.InvalidSchema as exc:
            return TopicAnswer(name, "rejected", reason=exc.reason)
    topic = sync.topic(entry)
    answer = _decide(
        sync,
        topic,
        parsed,
        entry.get("role", "value"),
        entry.get("references", ()),
        any_version=entry.get("any_version", False),
    )
    if any(topic.not_named.values()):
        answer.not_named = topic.not_named
    return answer


def schema_id_for(kind: str, fingerprint: str, references=()) -> int:
    """The schema id of a schema (with its references: (name, referenced version id)):
    the one it has already, under any subject, else a new one. One statement when the
    schema is new; concurrent registrations of the same schema wait on the unique index
    for the first to commit, then read its id."""
    key = schema_identity_key(kind, fingerprint, references)
    with connection.cursor() as cursor:
        cursor.execute(
            "WITH made AS (INSERT INTO registry_schemaidentity (key, schema_type, reusable,"
            " created_at) VALUES (%s, %s, true, now()) ON CONFLICT (key) WHERE reusable"
            " DO NOTHING RETURNING id)"
            " SELECT id FROM made UNION ALL"
            " SELECT id FROM registry_schemaidentity WHERE key = %s AND reusable LIMIT 1",
            [key, kind, key],
        )
        row = cursor.fetchone()
        if row is None:
            # A concurrent registration made it after this statement's snapshot: the
            # insert waited for it to commit; a new statement sees it.
            cursor.execute(
                "SELECT id FROM registry_schemaidentity WHERE key = %s AND reusable", [key]
            )
            row = cursor.fetchone()
    return row[0]


def _decide(
    sync: _Sync, topic: Topic, parsed, role: str = "value", references=(), *, any_version=False
) -> TopicAnswer:
    """`any_version`: a schema equal to any live published version is that version
    (the Schema Registry API's register); otherwise only the latest counts (a release's
    ModelSync that goes back to an older schema publishes it again as the newest)."""
    name = topic.name
    fingerprint, kind = parsed.fingerprint, parsed.kind
    history = (
        []
        if getattr(topic, "is_new", False)
        else list(topic.schema_versions.filter(role=role).order_by("version"))
    )
    # soft-deleted versions are out of the subject and of its checks
    published = [v for v in history if v.state == State.PUBLISHED and v.deleted_at is None]
    current = published[-1] if published else None
    if current is not None and current.schema_type != kind:
        return TopicAnswer(
            name,
            "rejected",
            reason=f"the subject's schemas are {current.schema_type}, not {kind}",
        )
    # else the string the registry answers for a version, sent back as it is (what Avro's
    # parser drops, a primitive's doc say, is gone from it): the same schema, as the
    # reference registry finds it by that string
    same = [v for v in published if v.fingerprint == fingerprint] or versions_answered_as(
        published, parsed.text, kind, references
    )
    if same and (any_version or same[-1] is current):
        return TopicAnswer(name, "unchanged", same[-1].version, fingerprint, row=same[-1])
    pending = next((v for v in history if v.state == State.AWAITING), None)
    if pending is not None and pending.fingerprint == fingerprint:
        return TopicAnswer(
            name,
            "awaiting_acknowledgement",
            pending.version,
            fingerprint,
            awaiting=missing_acknowledgements(pending),
            reads_it=pending.reads_it,
            verdict=pending.verdict,
            row=pending,
        )
    verdict = schema_types.check(
        kind,
        parsed.checked,
        [v.schema for v in published],
        mode=sync.mode_of(topic),
        policy=topic.compatibility_policy,
    )
    if pending is not None and verdict.compatible:
        # A level lowered since the waiting version was judged lets nothing past it: a
        # new version replaces the waiting one only if the waiting one's level passes it.
        judged = pending.verdict.get("mode") or sync.mode_of(topic)
        if not mode_implies(sync.mode_of(topic), judged):
            strict = schema_types.check(
                kind,
                parsed.checked,
                [v.schema for v in published],
                mode=judged,
                policy=topic.compatibility_policy,
            )
            if not strict.compatible:
                return TopicAnswer(
                    name,
                    "refused",
                    reason=f"Version {pending.version} of {name} waits for acknowledgement "
                    f"from {', '.join(missing_acknowledgements(pending)) or 'no one'}; the "
                    f"level lowered to {sync.mode_of(topic)} since it was judged under {judged} "
                    "lets no version replace it. Withdraw it, or have it acknowledged, first.",
                    verdict=strict.as_dict(),
                )
    if pending is not None:  # a newer release replaces the version that was waiting
        TRANSITIONS.check(pending.state, State.SUPERSEDED)
        pending.state = State.SUPERSEDED
        pending.save(update_fields=["state"])
    # A new version has no acknowledgement yet: every consumer is awaited, but for those
    # whose declared reader schema reads the breaking version.
    judged = verdict.as_dict()
    readers = {}
    if not verdict.compatible and topic.consumer_names:
        readers = judge_readers(
            topic, role, kind, parsed.document, topic.consumer_names, topic.compatibility_policy
        )
        judged["readers"] = readers
    awaiting = [n for n in topic.consumer_names if not readers.get(n, {}).get("reads")]
    reads_it = [n for n in topic.consumer_names if readers.get(n, {}).get("reads")]
    publish = verdict.compatible or not awaiting
    version = SchemaVersion.objects.create(
        topic=topic,
        role=role,
        version=(history[-1].version if history else 0) + 1,
        schema_type=kind,
        identity_id=schema_id_for(kind, fingerprint, references),
        schema=parsed.document,
        canonical=parsed.canonical,
        text=parsed.text,
        fingerprint=fingerprint,
        state=State.PUBLISHED if publish else State.AWAITING,
        published_at=timezone.now() if publish else None,
        verdict=judged,
        submitted_by=sync.service,
        release=sync.release,
    )
    if publish:
        _make_current(version, topic)
        return TopicAnswer(
            name,
            "published",
            version.version,
            fingerprint,
            reads_it=reads_it,
            verdict=version.verdict,
            row=version,
        )
    _announce(version, AWAITING, awaiting=awaiting)
    return TopicAnswer(
        name,
        "awaiting_acknowledgement",
        version.version,
        fingerprint,
        awaiting=awaiting,
        reads_it=reads_it,
        verdict=version.verdict,
        row=version,
    )


def model_sync(
    *,
    actor: Actor,
    service: Service,
    release: str,
    topics: list[dict],
    reads: list[dict] | None = None,
    remember: bool = True,
) -> dict:
    """Apply a release's ModelSync; the same release again answers what it answered.

    Each topic is all or nothing (its own savepoint). Topics the service produced
    before and this sync no longer names are reported, never deleted. `remember=False`
    answers from the registry as it is now, neither replaying nor keeping an answer
    (the Schema Registry API's register, which clients repeat to learn an id).

    `reads`, a consumer's release's reader schemas (`{topic, schema, schema_type?,
    role?}` per topic it consumes), are declared first, each all or nothing too, so the
    release's own readers are in force for what the rest of the sync decides.
    """
    # A sync without reads hashes as it always did: replays of earlier releases match.
    model = {"topics": topics, "reads": reads} if reads else topics
    body = json.dumps(model, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(body.encode()).hexdigest()
    with system_scope():
        earlier = (
            ModelSync.objects.filter(service=service, release=release).first() if remember else None
        )
        if earlier is not None:
            if earlier.digest != digest:
                raise Conflict(
                    f"Release {release} was synced with a different model.",
                    code="release_changed",
                )
            return earlier.answer
        answers = []
        declared = [_sync_reader(actor, service, release, entry) for entry in reads or ()]
        sync = _Sync(actor=actor, service=service, release=release, topics=topics)
        for entry in topics:
            answers.append(_sync_topic(sync, entry))
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
        if not remember:
            return answer
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
) -> TopicAnswer:
    """The Schema Registry API's register: ModelSync's decision for one subject (the
    topic's role), through the same gate, for a schema the caller has parsed (bundled
    with its references: (name, referenced version id), which tell its id apart). Never
    replayed nor kept as a release's answer (clients repeat a registration to learn an
    id), and it names no producer: only a release or an operator does. The answer's
    `row` is the version it names. `absent`: the caller read in this transaction that
    the topic does not exist (see _Sync)."""
    entry = {
        "name": topic_name,
        "producers": [],
        "role": role,
        "references": references,
        # the reference registry answers any live version's id for a schema the subject
        # has had, not only the latest's: a producer still on an older schema gets its id
        "any_version": True,
    }
    with _system_scope_once():
        sync = _Sync(
            actor=actor,
            service=service,
            release=release,
            topics=[entry],
            catalog=False,
            defaults=defaults,
            absent=absent,
        )
        return _sync_topic(sync, entry, parsed)


def _system_scope_once():
    """The system scope, or the caller's when it is in that scope's transaction already
    (the Schema Registry API's views are): entering it again would cost a savepoint and
    two settings of the same values, per registration."""
    if current_scope().system and connection.in_atomic_block:
        return nullcontext()
    return system_scope()


# --------------------------------------------------------------------------- reader schemas

# The verdict of a consumer that declared no reader schema: it must acknowledge, as
# every consumer did before readers were declared.
NO_READER = {
    "reads": False,
    "declared": False,
    "reason": "No reader schema declared: the consumer must acknowledge.",
}


def _reader_document(schema_type: str, schema):
    # A stored Avro primitive ("string") is JSON text to the parser, not a document.
    return json.dumps(schema) if schema_type == "AVRO" and isinstance(schema, str) else schema


def reader_verdict(reader: ReaderSchema | None, kind: str, writer, policy: str = "STRICT") -> dict:
    """Whether the reader schema reads data written with `writer` (a `kind` document),
    explained: the compatibility checker's BACKWARD check with the reader as the new
    schema and the writer as the old one ("can the new schema read the old one's data"
    is exactly "can this reader read this writer's data"), under the topic's policy."""
    if reader is None:
        return dict(NO_READER)
    declared = {
        "declared": True,
        "release": reader.release,
        "fingerprint": reader.fingerprint,
        "declared_at": reader.declared_at.isoformat(),
    }
    if reader.schema_type != kind:
        return {
            "reads": False,
            **declared,
            "reason": f"The reader schema is {reader.schema_type}; the version is {kind}.",
            "differences": [],
            "breaking": [],
        }
    parsed = schema_types.parse(kind, _reader_document(kind, reader.schema))
    verdict = schema_types.check(
        kind, parsed.checked, [_reader_document(kind, writer)], mode="BACKWARD", policy=policy
    )
    return {
        "reads": verdict.compatible,
        **declared,
        "reason": "Its reader schema reads the version."
        if verdict.compatible
        else "Its reader schema cannot read the version.",
        "differences": [d.as_dict() for d in verdict.differences],
        "breaking": [d.as_dict() for d in verdict.breaking],
    }


def judge_readers(
    topic: Topic, role: str, kind: str, writer, consumers: list[str], policy: str
) -> dict[str, dict]:
    """Each consumer's verdict on the writer schema, by name, from the reader schema in
    force for it (the latest it declared for the topic and role)."""
    readers = current_readers(topic, role, consumers)
    return {name: reader_verdict(readers.get(name), kind, writer, policy) for name in consumers}


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
        raise ReaderRefused("Name the consumer.", code="service_required", field="service")
    require_speaks_for(actor, name)
    service = Service.objects.filter(name=name).first()
    if service is None:
        raise ReaderRefused(
            f"No service is named {name}; only a consumer declares a reader.",
            code="not_a_consumer",
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
) -> tuple[ReaderSchema, SchemaVersion | None]:
    """Declare the reader schema a consumer's release reads the topic with (for itself
    only); audited. The same release declaring the same schema again is the same
    declaration; another schema under the same release is refused (409).

    The version of the topic (and role) waiting for acknowledgement, if there is one, is
    judged again for this consumer: a reader that reads it releases the consumer from
    acknowledging (and the last one released publishes it), one that does not puts it
    back among the awaited. Answers the declaration and that version."""
    require_speaks_for(actor, service.name)
    if schema_type not in schema_types.TYPES:
        raise ReaderRefused(
            f"Unknown schema type {schema_type!r}; supported: {', '.join(schema_types.TYPES)}.",
            code="invalid_schema_type",
            field="schema_type",
        )
    try:
        parsed = schema_types.parse(schema_type, schema)
    except compatibility.InvalidSchema as exc:
        raise ReaderRefused(
            f"The reader schema is invalid: {exc.reason}",
            code="invalid_reader_schema",
            field="schema",
        ) from None
    if not topic.consumers.filter(pk=service.pk).exists():
        raise ReaderRefused(
            f"{service.name} does not consume {topic.name}; only a consumer declares a reader.",
            code="not_a_consumer",
            field="service",
        )
    with system_scope(), transaction.atomic():
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


def _same_declaration(found: ReaderSchema, parsed, schema_type: str) -> ReaderSchema:
    """A release's reader declared again: the same declaration, or refused if its schema
    changed (a release is one build of the consumer's code, which reads one way)."""
    if found.fingerprint != parsed.fingerprint or found.schema_type != schema_type:
        raise Conflict(
            f"Release {found.release} of {found.service.name} declared another reader "
            f"schema for {found.topic.name}.",
            code="release_changed",
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
    version = _lock_waiting(waiting)
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
        version = _publish(version)
    return version


def _sync_reader(actor: Actor, service: Service, release: str, entry: dict) -> dict:
    """One reader a release declares, as ModelSync answers it: declared, or rejected with
    the reason and its stable code (the release's other entries go on)."""
    name, role = entry["topic"], entry.get("role", "value")
    answer = {"topic": name, **({"role": role} if role != "value" else {})}
    topic = Topic.objects.filter(name=name).first()
    if topic is None:
        return {
            **answer,
            "outcome": "rejected",
            "code": "unknown_topic",
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
            )
    except DomainError as exc:
        return {**answer, "outcome": "rejected", "code": exc.code, "reason": exc.detail}
    answer.update(outcome="declared", fingerprint=reader.fingerprint)
    if version is not None:
        mine = version.verdict.get("readers", {}).get(service.name, NO_READER)
        answer["waiting"] = {
            "version": version.version,
            "state": version.state,
            "reads": mine["reads"],
            "verdict": mine,
        }
    return answer


# --------------------------------------------------------------------------- acknowledgements


def _lock_waiting(version: SchemaVersion, *, to: str = State.PUBLISHED) -> SchemaVersion:
    """The version, locked, if it may still move to `to`: acknowledgements, reminders
    and overrides all lead to publication, which only a waiting version has ahead."""
    version = SchemaVersion.objects.select_for_update().select_related("topic").get(pk=version.pk)
    TRANSITIONS.check(
        version.state,
        to,
        detail=f"Version {version.version} of {version.topic.name} is {version.state}, "
        "not awaiting acknowledgement.",
        status=version.state,
    )
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
        version = _lock_waiting(version)
        if not version.topic.consumers.filter(pk=consumer.pk).exists():
            raise ValidationFailed(
                f"{consumer.name} does not consume {version.topic.name}.",
                code="not_a_consumer",
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
            version = _publish(version)
    return version


def withdraw_acknowledgement(
    *, actor: Actor, version: SchemaVersion, consumer: Service
) -> SchemaVersion:
    """Take an acknowledgement back while the version still waits (for itself only)."""
    require_speaks_for(actor, consumer.name)
    with system_scope(), transaction.atomic():
        version = _lock_waiting(version)
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
        raise ValidationFailed("An override needs a reason.", code="reason_required")
    with system_scope(), transaction.atomic():
        version = _lock_waiting(version)
        missing = missing_acknowledgements(version)
        version = _publish(version, override_reason=reason)
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
        version = _lock_waiting(version, to=State.WITHDRAWN)
        version.state = State.WITHDRAWN
        version.save(update_fields=["state"])
        audit_record(
            actor=actor,
            action="schema_version.withdraw",
            instance=version,
            changes={"state": [State.AWAITING, State.WITHDRAWN], "reason": [None, reason]},
        )
        # Every consumer hears of it, those that acknowledged it included: they may have
        # prepared a release for a version that will now never be published.
        _announce(version, WITHDRAWN, reason=reason or None)
    return version


def remind(*, actor: Actor, version: SchemaVersion) -> list[str]:
    """Announce the waiting version again to the consumers that have not acknowledged."""
    with system_scope(), transaction.atomic():
        version = _lock_waiting(version)
        missing = missing_acknowledgements(version)
        if missing:
            # Only to the consumers still awaited: the others have answered.
            _announce(version, AWAITING, awaiting=missing, reminder=True, addressees=missing)
            audit_record(
                actor=actor,
                action="schema_version.remind",
                instance=version,
                changes={"reminded": [None, missing]},
            )
    return missing


# --------------------------------------------------------------------------- deleting


class DeletionRefused(DomainError):
    """A deletion the reference registry's rules refuse; `registry_code` is its code there
    (40401/40402 not found, 40404/40406 already soft-deleted, 40405/40407 not soft-deleted
    first, 42206 still read)."""

    status = 422
    code = "deletion_refused"

    def __init__(self, detail: str, *, registry_code: int, status: int = 422):
        super().__init__(detail)
        self.registry_code, self.status = registry_code, status


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
    on one that has none, whoever may register on it."""
    if topic.producers.exists():
        require_produces(actor, topic)


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


def version_delete(
    *, actor: Actor, topic: Topic, role: str, number: int, subject: str, permanent: bool = False
) -> int:
    """Soft-delete a published version of a subject, or (`permanent`) remove one that was
    soft-deleted before; audited. The version the topic's consumers read is protected:
    it cannot be deleted while they read it."""
    _require_may_delete(actor, topic)
    with system_scope(), transaction.atomic():
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
    soft-deleted before; the version numbers deleted, each audited. A subject whose topic
    has consumers is read by them, so it is protected."""
    _require_may_delete(actor, topic)
    with system_scope(), transaction.atomic():
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
        for version in chosen:
            _delete(actor, version, permanent=permanent, subject=subject)
        _step_back(topic, role)
    return [v.version for v in chosen]


# --------------------------------------------------------------------------- registry settings


class RegistryRefused(DomainError):
    """A Schema Registry API operation its mode refuses, or an import whose id is another
    schema's (42205, as the reference answers both), or whose version exists already with
    another id (42207)."""

    status = 422
    code = "registry_refused"

    def __init__(self, detail: str, *, registry_code: int = 42205):
        super().__init__(detail)
        self.registry_code = registry_code


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
    _announce_lowering(actor, topic, before, after, consumers)


def _announce_lowering(actor: Actor, topic: Topic, before: str, after: str, consumers) -> None:
    """TopicCompatibilityLowered, on the shared topic and to each consumer: what the
    topic's next version is checked against has changed under them."""
    body = {
        "topic": topic.name,
        "from": before,
        "to": after,
        "consumers": consumers,
        "by": actor.label,
    }
    shared = emit(
        topic=TOPIC,
        event_type=LOWERED,
        aggregate_type="topic",
        aggregate_id=topic.name,
        payload=body,
    )
    _address(topic, LOWERED, body, consumers, shared)


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


def _import_identity(schema_id: int, kind: str, key: str) -> None:
    """The imported id, made the schema's: refused (42205, as the reference words it)
    when the id is another schema's. The same schema under a second id is kept, as the
    reference keeps it, without taking over from the id new registrations reuse.

    An id is another schema's while any version has it, soft-deleted ones included (they
    are still served by id). Once every version that had it is deleted permanently, the
    reference no longer knows the id (its lookup by id finds no subject-version) and lets
    an import give it to another schema; so does Steward, and the schema the id named
    before gets a new id if it is registered again."""
    existing = SchemaIdentity.objects.select_for_update().filter(pk=schema_id).first()
    if existing is not None and existing.key == key:
        return
    if existing is not None and existing.versions.exists():
        raise RegistryRefused(
            f"Overwrite new schema with id {schema_id} is not permitted.", registry_code=42205
        )
    taken = SchemaIdentity.objects.filter(key=key, reusable=True).exclude(pk=schema_id).exists()
    if existing is not None:
        existing.key, existing.schema_type, existing.reusable = key, kind, not taken
        existing.save(update_fields=["key", "schema_type", "reusable"])
        return
    SchemaIdentity.objects.create(pk=schema_id, key=key, schema_type=kind, reusable=not taken)
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
) -> SchemaVersion:
    """A migration's version, registered with the id and version it had in the registry
    it comes from (the subject in IMPORT mode): published as it is, without a check or the
    gate (it is history already in use), audited, not announced. The same import again
    answers the same version."""
    key = schema_identity_key(parsed.kind, parsed.fingerprint, references)
    with system_scope(), transaction.atomic():
        same = SchemaVersion.objects.filter(
            topic__name=topic_name, role=role, version=number, identity_id=schema_id
        ).first()
        if same is not None and same.fingerprint == parsed.fingerprint:
            return same
        _import_identity(schema_id, parsed.kind, key)
        topic = Topic.objects.select_for_update().filter(name=topic_name).first()
        if topic is None:
            topic = Topic(name=topic_name)
            topic.full_clean()
            topic.save()
            audit_record(actor=actor, action="topic.create", instance=topic)
            subscribe_steward_consumers_on_commit([topic_name])
        if topic.schema_versions.filter(role=role, version=number).exists():
            raise RegistryRefused(
                f"Version {number} of {topic_name} ({role}) exists already with another id.",
                registry_code=42207,
            )
        version = SchemaVersion.objects.create(
            identity_id=schema_id,
            topic=topic,
            role=role,
            version=number,
            schema_type=parsed.kind,
            schema=parsed.document,
            canonical=parsed.canonical,
            text=parsed.text,
            fingerprint=parsed.fingerprint,
            state=State.PUBLISHED,
            published_at=timezone.now(),
            verdict={"imported": True},
            submitted_by=service,
            release="schema-registry:import",
        )
        if role == "value" and number > topic.current_schema_version:
            topic.current_schema_version = number
            topic.save(update_fields=["current_schema_version", "updated_at"])
        audit_record(
            actor=actor,
            action="schema_version.import",
            instance=version,
            changes={"id": [None, schema_id], "version": [None, number]},
        )
    return version
