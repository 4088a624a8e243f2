"""The topic catalog: which services produce and consume which topics, and how.

Platform-wide reference data (no tenant): the schema-registry issue extends it with
schema versions and consumer acknowledgements.
"""

from __future__ import annotations

import hashlib
import json
import uuid

from django.db import models
from django.db.models import Q
from django.utils import timezone

from apps.core.search import name_indexes
from apps.core.transitions import Transitions
from apps.core.urls import reverse_pk
from apps.registry.formats import LABELS, MODES
from apps.registry.subjects import subject_of

# the schema types, as the console names them
SCHEMA_TYPES = list(LABELS.items())
REGISTRY_MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")


class Service(models.Model):
    """A platform service that produces or consumes events (Steward itself included)."""

    name = models.SlugField(max_length=100, unique=True)
    description = models.CharField(max_length=255, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["name"]
        # The console's search finds services and topics by name (apps.core.search.named).
        indexes = name_indexes("name", prefix="service_name")

    def __str__(self) -> str:
        return self.name


class Topic(models.Model):
    """A named stream of events of one kind of aggregate (`assets.asset`, …)."""

    name = models.CharField(
        max_length=249,
        unique=True,
        help_text="A Kafka topic name ([a-zA-Z0-9._-], 1-249 characters): Steward's own "
        "are dotted lower-case (assets.asset), a Kafka shop's are as Kafka names them.",
    )
    description = models.CharField(max_length=255, blank=True)
    producers = models.ManyToManyField(Service, related_name="produces", blank=True)
    # The services that read the topic's payloads: each must acknowledge a breaking
    # schema version before it is published.
    consumers = models.ManyToManyField(Service, related_name="consumes", blank=True)
    current_schema_version = models.PositiveIntegerField(default=1)
    compatibility_mode = models.CharField(
        max_length=24,
        choices=[(m, m) for m in MODES],
        blank=True,
        help_text="Blank: STEWARD_REGISTRY_DEFAULT_MODE (BACKWARD).",
    )
    # The Schema Registry API's mode of each of the topic's subjects that has one of its
    # own, by role ({"value": "IMPORT"}); a role not in it follows the registry's.
    subject_modes = models.JSONField(default=dict, blank=True)
    # The compatibility level of each of the topic's other subjects that has one of its
    # own, by role ({"key": "FULL"}); the payload's (value) is `compatibility_mode`. A
    # role not in it follows the registry's level, never the payload's.
    subject_levels = models.JSONField(default=dict, blank=True)
    # The data-contract settings of each subject that has any, by role: the Schema
    # Registry API's defaultMetadata, overrideMetadata, defaultRuleSet, overrideRuleSet
    # (apps.registry.versions.contracts).
    subject_contracts = models.JSONField(default=dict, blank=True)
    compatibility_policy = models.CharField(
        max_length=8, choices=[("STRICT", "STRICT"), ("LENIENT", "LENIENT")], default="STRICT"
    )
    created_at = models.DateTimeField(default=timezone.now, editable=False)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        indexes = name_indexes("name", prefix="topic_name")
        constraints = [
            models.CheckConstraint(
                condition=Q(name__regex=r"^[a-zA-Z0-9._-]{1,249}$"),
                name="topic_kafka_name",
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def producer_names(self) -> str:
        # from the prefetch in selectors.topic_list(): no query per row
        return ", ".join(sorted(p.name for p in self.producers.all())) or "—"

    @property
    def consumer_list(self) -> str:
        return ", ".join(sorted(c.name for c in self.consumers.all())) or "—"


class RegistryDefault(models.Model):
    """A registry-wide setting of the Schema Registry API, set by an operator: the default
    compatibility level (`compatibility`, over STEWARD_REGISTRY_DEFAULT_MODE), the mode
    (`mode`), or the data-contract defaults and overrides (`contract`, in `document`).
    No row: the configured default."""

    key = models.CharField(
        max_length=16,
        unique=True,
        choices=[("compatibility", "compatibility"), ("mode", "mode"), ("contract", "contract")],
    )
    value = models.CharField(max_length=24, blank=True)
    document = models.JSONField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


class Subscription(models.Model):
    """A consumer of a topic and the transport that reaches it.

    - `redis_stream`: the consumer reads the topic's stream with its own consumer
      group (named after the consumer); Steward keeps the group in place. Steward's
      own consumers are subscriptions of this kind too.
    - `webhook`: Steward POSTs each envelope, signed, to `endpoint`; the signing
      secret is a *reference* (`secret_ref`) resolved at delivery time, never stored.
    """

    class Transport(models.TextChoices):
        REDIS_STREAM = "redis_stream", "Redis stream"
        WEBHOOK = "webhook", "Signed webhook"

    consumer = models.ForeignKey(Service, on_delete=models.PROTECT, related_name="subscriptions")
    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="subscriptions")
    transport = models.CharField(max_length=16, choices=Transport.choices)
    endpoint = models.URLField(max_length=500, blank=True)
    secret_ref = models.CharField(
        max_length=200,
        blank=True,
        help_text="Where the webhook signing secret lives, e.g. env:ORDERS_WEBHOOK_SECRET.",
    )
    is_active = models.BooleanField(default=True)
    # Delivery health, kept by the runner: exponential back-off per subscription.
    consecutive_failures = models.PositiveIntegerField(default=0)
    last_error = models.CharField(max_length=500, blank=True)
    last_delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now, editable=False)

    class Meta:
        ordering = ["topic__name", "consumer__name"]
        constraints = [
            models.UniqueConstraint(
                fields=["consumer", "topic", "transport"], name="subscription_unique"
            ),
            models.CheckConstraint(
                condition=~Q(transport="webhook") | (~Q(endpoint="") & ~Q(secret_ref="")),
                name="subscription_webhook_needs_endpoint_and_secret",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.consumer} ← {self.topic} ({self.transport})"

    @property
    def group_name(self) -> str:
        """The Redis consumer group this subscription reads through."""
        if self.transport == self.Transport.WEBHOOK:
            return f"webhook.{self.pk}"
        return self.consumer.name


def schema_identity_key(kind: str, fingerprint: str, references=(), contract=None) -> str:
    """What makes two registrations the same schema, and so one schema id, as the
    reference registry has it: the schema type, the schema (its fingerprint), its
    references, each (name, the referenced version's row id) in order, and its data
    contract ((metadata, ruleSet), when it has either)."""
    parts = [kind, fingerprint, [list(r) for r in references]]
    if contract is not None and any(part is not None for part in contract):
        parts.append(list(contract))
    body = json.dumps(parts, separators=(",", ":"), sort_keys=True)
    return hashlib.sha256(body.encode()).hexdigest()


def _java_sorted(strings) -> list[str]:
    """Sorted as Java's TreeMap and TreeSet sort strings (by UTF-16 code unit), without
    repeats."""
    return sorted(set(strings), key=lambda s: s.encode("utf-16-be"))


def _utf8(value) -> bytes:
    """A field as the reference hashes it: a string's UTF-8, a lone surrogate as `?` (as
    Java encodes one); anything else as Jackson would have read it into a string."""
    text = value if isinstance(value, str) else json.dumps(value)
    return text.encode("utf-8", "replace")


def _metadata_bytes(metadata: dict) -> bytes:
    """Metadata.updateHash: each tag path (sorted) with its tags (sorted), each property
    (sorted) with its value, each sensitive name (sorted)."""
    tags = metadata.get("tags") or {}
    properties = metadata.get("properties") or {}
    parts = []
    for path in _java_sorted(tags):
        parts += [path, *_java_sorted(tags[path] or [])]
    for name in _java_sorted(properties):
        parts += [name, properties[name]]
    parts += _java_sorted(metadata.get("sensitive") or [])
    return b"".join(_utf8(p) for p in parts)


def _rule_bytes(rule: dict) -> bytes:
    """Rule.updateHash, field by field; a kind and mode left out are the reference's
    defaults (TRANSFORM, WRITEREAD), and `disabled` counts only when true."""
    params = rule.get("params") or {}
    parts = [
        rule.get("name"),
        rule.get("doc"),
        rule.get("kind") or "TRANSFORM",
        rule.get("mode") or "WRITEREAD",
        rule.get("type"),
        *_java_sorted(rule.get("tags") or []),
        *(p for name in _java_sorted(params) for p in (name, params[name])),
        rule.get("expr"),
        rule.get("onSuccess"),
        rule.get("onFailure"),
    ]
    found = b"".join(_utf8(p) for p in parts if p is not None)
    return found + (b"\x01" if rule.get("disabled") is True else b"")


def schema_guid(text: str, references=(), contract=None) -> str:
    """The GUID of a schema id, as the reference registry derives it from the schema's
    content (MD5.ofSchema): the UUID made of the MD5 of the schema's string (the one the
    Schema Registry API answers), then of each reference's name, subject and version (4
    bytes, big-endian), in order, then, when there is one, of a 1 byte and the metadata,
    and of a 1 byte and the rule set (migration, domain, then encoding rules).
    `references`: (name, referenced version) pairs; `contract`: (metadata, ruleSet)."""
    digest = hashlib.md5(_utf8(text), usedforsecurity=False)
    for name, referenced in references:
        digest.update(_utf8(name))
        digest.update(_utf8(subject_of(referenced.topic.name, referenced.role)))
        digest.update(referenced.version.to_bytes(4, "big", signed=True))
    metadata, rule_set = contract or (None, None)
    if metadata is not None:
        digest.update(b"\x01" + _metadata_bytes(metadata))
    if rule_set is not None:
        phases = ("migrationRules", "domainRules", "encodingRules")
        rules = [rule for phase in phases for rule in rule_set.get(phase) or []]
        digest.update(b"\x01" + b"".join(_rule_bytes(rule) for rule in rules))
    return str(uuid.UUID(bytes=digest.digest()))


class SchemaIdentity(models.Model):
    """A schema id of the Schema Registry API, shared by every subject-version that
    registered the same schema (the same `schema_identity_key`).

    New registrations of a schema reuse its one `reusable` id. An id a migration imported
    for a schema that had another id already stays as it is, not reusable: a client may
    hold either, so each keeps resolving to its schema."""

    key = models.CharField(max_length=64)
    # The reference registry's other name for the schema (schema_guid), from the content
    # the id was first given for: clients write it in a message header and look it up.
    # None only for an id no version had when GUIDs came, until it is given again.
    guid = models.UUIDField(null=True, db_index=True)
    schema_type = models.CharField(max_length=8)
    reusable = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["key"], condition=Q(reusable=True), name="one_reusable_schema_id"
            )
        ]

    def __str__(self) -> str:
        return f"schema id {self.pk}"


def held_by(verdict: dict, consumer: str) -> bool:
    """Whether the consumer must acknowledge a version before it is published, from the
    version's verdict (its level's check, and `readers`, the consumers' reader verdicts):
    a breaking version holds every consumer whose declared reader does not read it (one
    that declared none included); a version the level passes holds only a consumer whose
    declared reader cannot read it (the level compares versions with each other, never
    with what a consumer's code reads)."""
    mine = (verdict.get("readers") or {}).get(consumer)
    if verdict.get("compatible") is True:
        return mine is not None and mine.get("declared") is True and not mine.get("reads")
    return not (mine or {}).get("reads")


class SchemaVersion(models.Model):
    """One version of a topic's payload schema, as a release submitted it.

    A compatible version (or one no consumer reads) is published as it is created; a
    breaking one waits for its consumers' acknowledgements (or an operator's override),
    and is superseded by a newer release or withdrawn by its producer meanwhile.
    """

    class State(models.TextChoices):
        AWAITING = "awaiting_acknowledgement", "Awaiting acknowledgement"
        PUBLISHED = "published", "Published"
        SUPERSEDED = "superseded", "Superseded"
        WITHDRAWN = "withdrawn", "Withdrawn"

    TRANSITIONS = Transitions(
        field="state",
        initial=[State.AWAITING, State.PUBLISHED],
        moves={
            State.AWAITING: {State.PUBLISHED, State.SUPERSEDED, State.WITHDRAWN},
            State.PUBLISHED: set(),
            State.SUPERSEDED: set(),
            State.WITHDRAWN: set(),
        },
    )

    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="schema_versions")
    # What of the topic's messages the schema describes, as the registry's subject names
    # it (apps.registry.subjects): "value" (the payload Steward's events carry), "key",
    # or "record:<full record name>" (RecordNameStrategy, TopicRecordNameStrategy).
    # Each role has its own history, numbered from 1, and its own gate.
    role = models.CharField(max_length=255, default="value")
    version = models.PositiveIntegerField()
    schema_type = models.CharField(max_length=8, choices=SCHEMA_TYPES, default="JSON")
    # The Schema Registry API's id of the version's schema (shared across subjects).
    identity = models.ForeignKey(SchemaIdentity, on_delete=models.PROTECT, related_name="versions")
    schema = models.JSONField(help_text="The schema as submitted.")
    canonical = models.TextField(
        help_text="Keys sorted, no whitespace (Avro: names in full): what the fingerprint hashes."
    )
    # The Schema Registry API's string of the schema, as the reference registry writes it
    # from the schema as sent (apps.registry.formats.schema_text); a version kept without it is
    # answered from `schema` (apps.registry.versions.texts).
    text = models.TextField(blank=True, default="")
    # The data contract registered with the schema (the Schema Registry API's `metadata`
    # and `ruleSet`): kept and answered, never executed (clients run the rules).
    metadata = models.JSONField(null=True, blank=True)
    rule_set = models.JSONField(null=True, blank=True)
    fingerprint = models.CharField(max_length=64, db_index=True)
    state = models.CharField(max_length=32, choices=State.choices)
    verdict = models.JSONField(default=dict, help_text="The compatibility verdict, explained.")
    submitted_by = models.ForeignKey(
        Service, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    release = models.CharField(max_length=200, blank=True)
    override_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    published_at = models.DateTimeField(null=True, blank=True)
    # Soft-deleted through the Schema Registry API: gone from its subject's versions and
    # from compatibility checks, still served by id (data written with it stays readable).
    deleted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["topic__name", "-version"]
        constraints = [
            models.UniqueConstraint(
                fields=["topic", "role", "version"], name="schema_version_unique"
            ),
            models.UniqueConstraint(
                fields=["topic", "role"],
                condition=Q(state="awaiting_acknowledgement"),
                name="one_pending_schema_version_per_topic",
            ),
        ]
        permissions = [("override_schemaversion", "Publish a breaking schema version anyway")]

    def __str__(self) -> str:
        return f"{self.topic.name} v{self.version}"

    def get_absolute_url(self) -> str:
        return reverse_pk("registry:version-detail", self.pk)

    @property
    def awaiting_consumers(self) -> list[str]:
        """The topic's consumers that have not acknowledged this version and must
        (`held_by`), by name: from the list selectors' prefetch when there is one (no
        query per row), else read."""
        done = {ack.consumer_id for ack in self.acknowledgements.all() if ack.withdrawn_at is None}
        verdict = self.verdict if isinstance(self.verdict, dict) else {}
        return sorted(
            c.name
            for c in self.topic.consumers.all()
            if c.pk not in done and held_by(verdict, c.name)
        )

    @property
    def contract(self) -> tuple:
        """(metadata, ruleSet) as the schema's identity counts them."""
        return (self.metadata, self.rule_set)

    @property
    def reader_verdicts(self) -> list[dict]:
        """Each consumer's verdict on a breaking version, by consumer name: whether the
        reader schema it declared reads the version (apps.registry.versions.readers)."""
        readers = self.verdict.get("readers") if isinstance(self.verdict, dict) else None
        return [{"consumer": name, **readers[name]} for name in sorted(readers or {})]

    @property
    def reads_it(self) -> list[str]:
        return [r["consumer"] for r in self.reader_verdicts if r.get("reads")]

    @property
    def awaiting_names(self) -> str:
        return ", ".join(self.awaiting_consumers) or "—"

    @property
    def reads_it_names(self) -> str:
        return ", ".join(self.reads_it) or "—"


class Acknowledgement(models.Model):
    """A consumer's word that its released code reads a pending schema version."""

    version = models.ForeignKey(
        SchemaVersion, on_delete=models.CASCADE, related_name="acknowledgements"
    )
    consumer = models.ForeignKey(Service, on_delete=models.PROTECT, related_name="+")
    acknowledged_by = models.CharField(max_length=150)
    acknowledged_at = models.DateTimeField(default=timezone.now)
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["acknowledged_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "consumer"],
                condition=Q(withdrawn_at__isnull=True),
                name="one_live_acknowledgement",
            )
        ]

    def __str__(self) -> str:
        return f"{self.consumer} acknowledged {self.version_id}"


class ReaderSchema(models.Model):
    """The schema a consumer's released code reads a topic's messages (of one role) with,
    as a release of the consumer declared it. The latest declaration of a (consumer,
    topic, role) is the one in force; earlier ones stay as history. A breaking version is
    checked against it: a consumer whose reader reads the version need not acknowledge."""

    service = models.ForeignKey(Service, on_delete=models.PROTECT, related_name="readers")
    topic = models.ForeignKey(Topic, on_delete=models.PROTECT, related_name="readers")
    role = models.CharField(max_length=255, default="value")
    release = models.CharField(max_length=200)
    schema_type = models.CharField(max_length=8, choices=SCHEMA_TYPES, default="JSON")
    schema = models.JSONField(
        help_text="The reader schema as declared, bundled with what its references name."
    )
    # The other subjects' versions it uses, resolved ({name, subject, version}): kept to be
    # answered; the schema stands alone without them.
    references = models.JSONField(default=list, blank=True)
    fingerprint = models.CharField(max_length=64)
    declared_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["topic__name", "role", "service__name", "-declared_at", "-id"]
        constraints = [
            # A release declares one reader per topic and role: declaring it again is the
            # same declaration (or, with another schema, refused as the release changed).
            models.UniqueConstraint(
                fields=["service", "topic", "role", "release"], name="reader_schema_per_release"
            ),
        ]
        indexes = [
            models.Index(
                fields=["topic", "role", "service", "-declared_at"], name="reader_schema_latest"
            )
        ]

    def __str__(self) -> str:
        return f"{self.service} reads {self.topic} ({self.release})"


class ModelSync(models.Model):
    """A release's ModelSync and the answer it got: the same sync again answers the same."""

    service = models.ForeignKey(Service, on_delete=models.PROTECT, related_name="+")
    release = models.CharField(max_length=200)
    digest = models.CharField(max_length=64)
    answer = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["service", "release"], name="model_sync_once")
        ]

    def __str__(self) -> str:
        return f"{self.service} {self.release}"


class SchemaReference(models.Model):
    """A schema version's use of another subject's version (the Schema Registry API's
    `references`): `name` is how the schema names it (a JSON Schema `$ref` URI, an Avro
    type's full name). The version is stored bundled with what it references (see
    compatibility.bundle, avro.bundle); these rows say what it was registered with, answer
    `referencedby`, and keep the referenced version from being deleted."""

    version = models.ForeignKey(SchemaVersion, on_delete=models.CASCADE, related_name="references")
    position = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=500)
    # PROTECT: a referenced version outlives every version that references it.
    referenced = models.ForeignKey(
        SchemaVersion, on_delete=models.PROTECT, related_name="referenced_by"
    )

    class Meta:
        ordering = ["version", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "position"], name="schema_reference_position"
            ),
            models.UniqueConstraint(fields=["version", "name"], name="schema_reference_name"),
            models.CheckConstraint(
                condition=~Q(version=models.F("referenced")), name="schema_reference_not_self"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.version_id} → {self.referenced_id} as {self.name}"
