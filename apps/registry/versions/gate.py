"""The compatibility gate: one subject's decision on a schema, shared by a release's
ModelSync and the Schema Registry API's register.

The same schema as a live version is `unchanged`; a compatible one is published at once
unless a consumer's declared reader schema cannot read it; a breaking one waits, as the
subject's one pending version, for every consumer whose reader schema does not read it
to acknowledge it (or an operator to override, with a reason); one the level passes
waits likewise, for the consumers whose declared reader cannot read it. A newer schema
supersedes the version waiting.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core.context import Actor
from apps.core.errors import Conflict, InvalidTransition
from apps.registry import formats
from apps.registry.codes import RegistryCode
from apps.registry.models import (
    SchemaIdentity,
    SchemaVersion,
    Service,
    Topic,
    held_by,
    schema_guid,
    schema_identity_key,
)
from apps.registry.news import AWAITING
from apps.registry.selectors import (
    missing_acknowledgements,
    mode_of,
    own_level,
    registry_contract,
    registry_defaults,
    subject_contract,
)
from apps.registry.services import (
    require_may_name_producers,
    schema_references_record,
    service_ensure,
    subscribe_steward_consumers_on_commit,
    topic_consumers_add,
)
from apps.registry.subjects import KEY, subject_of
from apps.registry.subjects import TOPIC as TOPIC_NAME
from apps.registry.versions import contracts
from apps.registry.versions.acknowledgements import make_current
from apps.registry.versions.announcements import announce, producers_joined
from apps.registry.versions.errors import Incompatible
from apps.registry.versions.modes import mode_implies, policy_implies
from apps.registry.versions.readers import judge_readers
from apps.registry.versions.submitted import (
    compatibility_verdict,
    first_failing,
    parse_referencing,
    reference_key,
    same_schema,
)
from apps.tenancy.audit import audit_record

State = SchemaVersion.State
TRANSITIONS = SchemaVersion.TRANSITIONS


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
    # The references the schema was sent with, resolved: {name, subject, version}.
    references: list[dict] = field(default_factory=list)
    # The version's data contract, as the Schema Registry API answers it: when it has one.
    metadata: dict | None = None
    rule_set: dict | None = None
    # The answer for the topic's key schema, when the entry declares one.
    key: TopicAnswer | None = None
    # The version the answer names, for callers in the process (never in the answer).
    row: SchemaVersion | None = field(default=None, compare=False, repr=False)
    # The version's reference rows, when this decision created the version (else None).
    recorded: list | None = field(default=None, compare=False, repr=False)

    def as_dict(self) -> dict:
        answer = {"topic": self.topic, "outcome": self.outcome}
        for name in (
            "version",
            "fingerprint",
            "reason",
            "awaiting",
            "reads_it",
            "verdict",
            "references",
            "not_named",
        ):
            value = getattr(self, name)
            if value not in (None, "", [], {}):
                answer[name] = value
        if self.metadata is not None:
            answer["metadata"] = self.metadata
        if self.rule_set is not None:
            answer["ruleSet"] = self.rule_set
        if self.key is not None:
            answer["key"] = {k: v for k, v in self.key.as_dict().items() if k != "topic"}
        return answer


class Sync:
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
        if catalog:
            # A release declares its own roles: on a topic others produce it is no
            # producer (nor names the topic's producers or consumers) until an operator
            # or a producer says so. Asked of every entry before anything is written.
            for entry in topics:
                known = self.topics.get(entry["name"])
                require_may_name_producers(
                    actor,
                    entry["name"],
                    entry.get("producers", [service.name]),
                    None if known is None else [p.name for p in known.producers.all()],
                )
        names = set()
        for entry in topics:
            names.update(entry.get("producers", []), entry.get("consumers", []))
        names.discard(service.name)
        self.services = {service.name: service}
        if names:
            self.services.update((s.name, s) for s in Service.objects.filter(name__in=names))
        for name in names - set(self.services):
            self.services[name] = service_ensure(actor=actor, name=name)

    def mode_of(self, topic: Topic, role: str = "value") -> str:
        """The subject's (the topic's role's) compatibility level, the registry's read
        once for the whole sync (not once per topic that follows it)."""
        if not own_level(topic, role) and self._defaults is None:
            self._defaults = registry_defaults()
        return mode_of(topic, self._defaults, role)

    def contract_config(self, topic: Topic, role: str) -> dict:
        """The subject's data-contract settings in force (its own, else the registry's,
        read once for the whole sync)."""
        if self._defaults is None:
            self._defaults = registry_defaults()
        return contracts.config_in_force(
            subject_contract(topic, role), registry_contract(self._defaults)
        )

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
        joining = [self.services[n] for n in wanted if n not in producers]
        topic.producers.add(*joining)
        named_consumers = entry.get("consumers", [])
        if named_consumers:
            topic_consumers_add(
                actor=self.actor,
                topic=topic,
                consumers=[self.services[n] for n in named_consumers],
                registered=consumers,
            )
        topic.consumer_names = sorted(consumers | set(named_consumers))
        if joining and known is not None:
            producers_joined(self.actor, topic, sorted(producers), [s.name for s in joining])
        # Reported, never removed: a release may just not mention everyone.
        topic.not_named = {
            "producers": sorted(producers - set(wanted)),
            "consumers": sorted(consumers - set(named_consumers)),
        }
        return topic


def sync_topic(sync: Sync, entry: dict, parsed=None) -> TopicAnswer:
    """One topic of a sync, all or nothing (its own savepoint); `parsed`, the entry's
    schema when the caller parsed it already. The entry's `references` (and its `key`'s)
    are resolved already: (name, referenced version) pairs (submitted.resolve_references)."""
    try:
        with transaction.atomic():
            return _decide_entry(sync, entry, parsed)
    except (IntegrityError, InvalidTransition):
        # A concurrent sync created the same topic or version, or an acknowledgement
        # moved the waiting version this one supersedes: not an answer to keep for this
        # release, the caller retries it whole.
        raise Conflict(
            f"Another sync changed {entry['name']} at the same moment; send this release again.",
            code=RegistryCode.SYNC_CONFLICT,
        ) from None


def _decide_entry(sync: Sync, entry: dict, parsed=None) -> TopicAnswer:
    """The entry's payload (value) schema decided, and its key schema when it declares
    one (`key`: {schema, schema_type?, references?}), each its own subject with its own
    history and gate; an entry whose schemas are not both valid is rejected whole."""
    name, key = entry["name"], entry.get("key")
    try:
        if parsed is None:
            parsed = _parsed(entry)
    except formats.InvalidSchema as exc:
        return TopicAnswer(name, "rejected", reason=exc.reason)
    try:
        key_parsed = None if key is None else _parsed(key)
    except formats.InvalidSchema as exc:
        return TopicAnswer(name, "rejected", reason=f"key: {exc.reason}")
    topic = sync.topic(entry)
    answer = _decide(
        sync,
        topic,
        parsed,
        entry.get("role", "value"),
        entry.get("references", ()),
        any_version=entry.get("any_version", False),
        registering=entry.get("registering"),
        sent=entry.get("contract"),
    )
    if key is not None:
        answer.key = _decide(
            sync, topic, key_parsed, KEY, key.get("references", ()), sent=key.get("contract")
        )
    if any(topic.not_named.values()):
        answer.not_named = topic.not_named
    return answer


def _parsed(spec: dict):
    """A release's schema (an object or its text) parsed, bundled with what its resolved
    references name."""
    kind = spec.get("schema_type", "JSON")
    return parse_referencing(kind, spec["schema"], spec.get("references", ()))


def schema_identity_for(parsed, references=(), contract=None) -> SchemaIdentity:
    """The schema id of a parsed schema (with its resolved references: (name, referenced
    version)): the one it has already, under any subject, else a new one, with the GUID
    of this content (schema_guid; an id that had none, from before GUIDs, gets it now),
    read whole so that answering it costs nothing more. One statement; concurrent
    registrations of the same new schema wait on the unique index for the first to
    commit, then read its id."""
    key = schema_identity_key(parsed.kind, parsed.fingerprint, reference_key(references), contract)
    guid = schema_guid(parsed.text, references, contract)
    found = SchemaIdentity.objects.raw(
        "WITH made AS (INSERT INTO registry_schemaidentity (key, guid, schema_type, reusable,"
        " created_at) VALUES (%s, %s::uuid, %s, true, now())"
        " ON CONFLICT (key) WHERE reusable DO NOTHING RETURNING *),"
        " found AS (SELECT * FROM made UNION ALL"
        " SELECT * FROM registry_schemaidentity WHERE key = %s AND reusable LIMIT 1),"
        " named AS (UPDATE registry_schemaidentity SET guid = %s::uuid"
        " WHERE id IN (SELECT id FROM found) AND guid IS NULL)"
        " SELECT id, key, COALESCE(guid, %s::uuid) AS guid, schema_type, reusable, created_at"
        " FROM found",
        [key, guid, parsed.kind, key, guid, guid],
    )
    for identity in found:
        return identity
    # A concurrent registration made it after this statement's snapshot: the insert
    # waited for it to commit; a new statement sees it.
    return SchemaIdentity.objects.get(key=key, reusable=True)


@dataclass(frozen=True)
class Registering:
    """What the Schema Registry API's register adds to a subject's decision: the subject
    as the client named it, and the data contract sent (the version's is laid over the
    subject's latest version's: contracts.Sent). A breaking schema no consumer must
    acknowledge is refused (Incompatible), as the reference registry refuses it, instead
    of published."""

    subject: str
    contract: contracts.Sent = contracts.Sent()
    # the `version` sent: None (or 0) none, -1 the latest, else the one the new version
    # must be (contracts.version_wanted)
    number: int | None = None


def _decide(
    sync: Sync,
    topic: Topic,
    parsed,
    role: str = "value",
    references=(),
    *,
    any_version=False,
    registering: Registering | None = None,
    sent: contracts.Sent | None = None,
) -> TopicAnswer:
    """`references`: the schema's, resolved ((name, referenced version) pairs), which tell
    its id apart and are kept with a new version. `any_version`: a schema equal to any
    live published version is that version (the Schema Registry API's register);
    otherwise only the latest counts (a release's ModelSync that goes back to an older
    schema publishes it again as the newest). `sent`: a release's data contract (a
    registration's is in `registering`), laid over the subject's settings alike."""
    sent = registering.contract if registering is not None else (sent or contracts.Sent())
    if sent.config is None:
        sent = replace(sent, config=sync.contract_config(topic, role))
    answer = _decided(sync, topic, parsed, role, references, any_version, registering, sent)
    if answer.row is not None:
        answer.metadata, answer.rule_set = answer.row.metadata, answer.row.rule_set
    answer.references = [
        {
            "name": name,
            "subject": subject_of(target.topic.name, target.role),
            "version": target.version,
        }
        for name, target in references
    ]
    return answer


def _decided(
    sync: Sync, topic: Topic, parsed, role, references, any_version, registering, sent
) -> TopicAnswer:
    history = (
        []
        if getattr(topic, "is_new", False)
        else list(topic.schema_versions.filter(role=role).order_by("version"))
    )
    # soft-deleted versions are out of the subject and of its checks
    published = [v for v in history if v.state == State.PUBLISHED and v.deleted_at is None]
    pending = next((v for v in history if v.state == State.AWAITING), None)
    contract = sent.effective(published[-1] if published else None)
    config = sent.config or {}
    # a config's compatibilityGroup: only the versions of the new one's group are checked
    checked = contracts.in_group(published, contract[0], config)
    key = reference_key(references)
    mode = sync.mode_of(topic, role)
    # Through the Schema Registry API a schema of another type than the subject's is
    # judged as the reference judges it: incompatible (409) unless the level is NONE,
    # which lets it in. A release (ModelSync) never changes a subject's type.
    retyped = registering is not None and bool(published)
    retyped = retyped and published[-1].schema_type != parsed.kind
    if retyped and checked:
        verdict = compatibility_verdict(
            parsed, checked, mode=mode, policy=topic.compatibility_policy
        )
        if not verdict.compatible:
            policy = topic.compatibility_policy
            _refuse(registering, parsed, checked, mode, policy, judged=verdict.breaking)
    wanted = registering.number if registering is not None else None
    number = (history[-1].version if history else 0) + 1
    # As the reference registers: the schema is looked up first with the contract as
    # sent (-1: against the latest alone; not when the config lays a contract), then,
    # without a `version`, with the contract laid and stamped as the new version's. A
    # `version` (compare-and-set) is otherwise a new version even of a schema it has.
    known = None
    if wanted in (None, 0, -1) and not contracts.laid(config):
        among = published[-1:] if wanted == -1 else published
        as_sent = (sent.metadata, sent.rule_set)
        known = _known(topic.name, parsed, among, pending, key, any_version, as_sent, retyped)
    contract = contracts.version_stamped(contract, wanted, number)
    if known is None and wanted in (None, 0):
        known = _known(topic.name, parsed, published, pending, key, any_version, contract, retyped)
    if known is not None:
        return known
    reserved = _reserved_breaks(topic, parsed, config, contract, published)
    if reserved and registering is not None:
        _refuse(registering, parsed, checked, mode, topic.compatibility_policy, reserved)
    if reserved:
        return TopicAnswer(topic.name, "refused", reason=" ".join(d.message for d in reserved))
    if not (retyped and checked):
        verdict = formats.check(
            parsed.kind,
            parsed.checked,
            [v.schema for v in checked],
            mode=mode,
            policy=topic.compatibility_policy,
        )
    if pending is not None and verdict.compatible:
        refused = _held_by_waiting(sync, topic, parsed, checked, pending, role)
        if refused is not None:
            return refused
    if pending is not None:  # a newer release replaces the version that was waiting
        refused = _not_its_to_supersede(sync, topic, pending)
        if refused is not None:
            return refused
        TRANSITIONS.move(pending, State.SUPERSEDED)
    return _submit(
        sync, topic, parsed, role, references, verdict, number, registering, contract, checked
    )


def _reserved_breaks(topic: Topic, parsed, config: dict, contract, published) -> list:
    """Under the config's `validateFields`, what a new version breaks that has a field its
    metadata reserves, or no longer reserves one the latest version reserved: refused
    whatever the level (no consumer's acknowledgement makes it right), as the reference
    refuses it (409, 40901 through the Schema Registry API)."""
    return contracts.reserved_breaks(
        config,
        contracts.top_level_fields(parsed),
        contract[0],
        published[-1] if published else None,
    )


def _refuse(
    registering: Registering, parsed, checked, mode: str, policy: str, reserved=(), judged=()
):
    """A registration refused as the reference refuses it (Incompatible): the reserved
    fields it breaks, then the differences from the version it fails against (the newest
    under a transitive level), that version and its schema, and the level. `judged`: the
    differences found against all of `checked`, should no one version fail alone."""
    failing = first_failing(parsed, checked, mode=mode, policy=policy) if checked else None
    breaking = [d.as_dict() for d in reserved]
    old_version = old_schema = None
    if failing is None:
        breaking += [d if isinstance(d, dict) else d.as_dict() for d in judged]
    else:
        old, differences = failing
        breaking += [d.as_dict() for d in differences]
        old_version, old_schema = old.version, old.text
    raise Incompatible(
        registering.subject,
        breaking,
        old_version=old_version,
        old_schema=old_schema,
        compatibility=mode,
        validate_fields=bool((registering.contract.config or {}).get("validateFields")),
    )


def _known(
    name: str,
    parsed,
    published,
    pending,
    references,
    any_version,
    contract=(None, None),
    retyped=False,
) -> TopicAnswer | None:
    """The answer when the schema is not new to the subject: of another type than its
    schemas (rejected, unless `retyped`: the level let the new type in), a published
    version (unchanged), or the version waiting. `contract`: (metadata, ruleSet) sent,
    which finds a version as the reference's look-up finds it (contracts.looked_up)."""
    fingerprint, kind = parsed.fingerprint, parsed.kind
    current = published[-1] if published else None
    if current is not None and current.schema_type != kind and not retyped:
        return TopicAnswer(
            name,
            "rejected",
            reason=f"the subject's schemas are {current.schema_type}, not {kind}",
        )
    same = contracts.looked_up(contract, same_schema(published, parsed, references))
    if same and (any_version or same[-1] is current):
        return TopicAnswer(name, "unchanged", same[-1].version, fingerprint, row=same[-1])
    if (
        pending is not None
        and pending.fingerprint == fingerprint
        and contracts.looked_up(contract, [pending])
    ):
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
    return None


def _not_its_to_supersede(sync: Sync, topic: Topic, pending: SchemaVersion) -> TopicAnswer | None:
    """A waiting version is its topic's producers' (and operators') to replace: another
    service's schema must not push it aside, even on a topic no one produces yet (the
    Schema Registry API's subjects), where only the one that submitted it may."""
    account = sync.actor.service_account
    if account is None or pending.submitted_by_id == sync.service.pk:
        return None
    if topic.producers.filter(pk=sync.service.pk).exists():
        return None
    return TopicAnswer(
        topic.name,
        "refused",
        reason=f"Version {pending.version} of {topic.name} waits for acknowledgement; only "
        "the topic's producers (or an operator) replace it.",
    )


def _held_by_waiting(
    sync: Sync, topic: Topic, parsed, published, pending, role="value"
) -> TopicAnswer | None:
    """A level or policy lowered since the waiting version was judged lets nothing past
    it: a new version replaces the waiting one only if the waiting one's level and policy
    pass it."""
    level = sync.mode_of(topic, role)
    judged = pending.verdict.get("mode") or level
    policy = topic.compatibility_policy
    judged_policy = pending.verdict.get("policy") or policy
    if mode_implies(level, judged) and policy_implies(policy, judged_policy):
        return None
    strict = formats.check(
        parsed.kind,
        parsed.checked,
        [v.schema for v in published],
        mode=judged,
        policy=judged_policy,
    )
    if strict.compatible:
        return None
    name = topic.name
    return TopicAnswer(
        name,
        "refused",
        reason=f"Version {pending.version} of {name} waits for acknowledgement "
        f"from {', '.join(missing_acknowledgements(pending)) or 'no one'}; the "
        f"level and policy now in force ({level}, {policy}) check less than those it "
        f"was judged under ({judged}, {judged_policy}), and let no version replace it. "
        "Withdraw it, or have it acknowledged, first.",
        verdict=strict.as_dict(),
    )


def _submit(
    sync: Sync,
    topic: Topic,
    parsed,
    role,
    references,
    verdict,
    number,
    registering=None,
    contract=None,
    checked=(),
) -> TopicAnswer:
    """The new version, judged by every declared reader of the topic's consumers
    (whatever the level says: the level compares versions, a reader is what a consumer's
    code reads), and published unless a consumer must acknowledge it first (held_by): on
    a breaking version, each whose reader does not read it; on one the level passes,
    each whose declared reader cannot. A new version has no acknowledgement yet."""
    judged = verdict.as_dict()
    readers = {}
    if topic.consumer_names:
        readers = judge_readers(
            topic,
            role,
            parsed.kind,
            parsed.document,
            topic.consumer_names,
            topic.compatibility_policy,
            declared_only=verdict.compatible,
        )
        if readers:
            judged["readers"] = readers
    awaiting = [n for n in topic.consumer_names if held_by(judged, n)]
    if registering is not None and not verdict.compatible and not awaiting:
        # rolls back this subject's savepoint: a waiting version it superseded stays
        policy, breaking = topic.compatibility_policy, judged.get("breaking", [])
        _refuse(registering, parsed, list(checked), verdict.mode, policy, judged=breaking)
    if registering is not None:  # compatible first, then the number, as the reference
        contracts.require_next(registering.number, number)
    reads_it = [n for n in topic.consumer_names if readers.get(n, {}).get("reads")]
    publish = not awaiting
    metadata, rule_set = contract or (None, None)
    version = SchemaVersion.objects.create(
        topic=topic,
        role=role,
        version=number,
        schema_type=parsed.kind,
        identity=schema_identity_for(parsed, references, (metadata, rule_set)),
        metadata=metadata,
        rule_set=rule_set,
        schema=parsed.document,
        canonical=parsed.canonical,
        text=parsed.text,
        fingerprint=parsed.fingerprint,
        state=State.PUBLISHED if publish else State.AWAITING,
        published_at=timezone.now() if publish else None,
        verdict=judged,
        submitted_by=sync.service,
        release=sync.release,
    )
    # a waiting version holds its references too: it may yet be published
    recorded = schema_references_record(version, references)
    if publish:
        make_current(version, topic)
        outcome, awaiting = "published", []
    else:
        announce(version, AWAITING, awaiting=awaiting)
        outcome = "awaiting_acknowledgement"
    return TopicAnswer(
        topic.name,
        outcome,
        version.version,
        parsed.fingerprint,
        awaiting=awaiting,
        reads_it=reads_it,
        verdict=version.verdict,
        row=version,
        recorded=recorded,
    )
