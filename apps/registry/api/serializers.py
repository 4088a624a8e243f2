from rest_framework import serializers
from rest_framework.validators import UniqueValidator

from apps.core.api.serializers import StrictModelSerializer, StrictSerializer
from apps.registry.codes import RegistryCode
from apps.registry.models import ReaderSchema, SchemaVersion, Service, Subscription, Topic

# The model's choices, so the declared and the stored type are one enum in the schema.
SCHEMA_TYPES = ReaderSchema._meta.get_field("schema_type").choices


class ServiceSerializer(StrictModelSerializer):
    # Dotted names too, as Steward's own services have (`steward.recent-events`).
    name = serializers.RegexField(
        r"^[-a-zA-Z0-9_.]+$",
        max_length=100,
        validators=[UniqueValidator(queryset=Service.objects.all())],
    )

    class Meta:
        model = Service
        fields = ["id", "name", "description", "created_at"]
        read_only_fields = ["id", "created_at"]


class TopicSerializer(StrictModelSerializer):
    producers = serializers.SlugRelatedField(
        slug_field="name", many=True, queryset=Service.objects.all(), required=False
    )

    class Meta:
        model = Topic
        fields = [
            "id",
            "name",
            "description",
            "producers",
            "compatibility_policy",
            "current_schema_version",
            "created_at",
        ]
        read_only_fields = ["id", "current_schema_version", "created_at"]


class TopicPolicySerializer(StrictSerializer):
    compatibility_policy = serializers.ChoiceField(
        choices=Topic._meta.get_field("compatibility_policy").choices,
        help_text="How the topic's JSON Schema versions are judged from now on: STRICT or "
        "LENIENT (docs/registry-compatibility.md).",
    )


class SubscriptionSerializer(StrictModelSerializer):
    consumer = serializers.SlugRelatedField(slug_field="name", queryset=Service.objects.all())
    topic = serializers.SlugRelatedField(slug_field="name", queryset=Topic.objects.all())

    class Meta:
        model = Subscription
        fields = [
            "id",
            "consumer",
            "topic",
            "transport",
            "endpoint",
            "secret_ref",
            "is_active",
            "consecutive_failures",
            "last_error",
            "last_delivered_at",
            "created_at",
        ]
        read_only_fields = [
            "id",
            "consecutive_failures",
            "last_error",
            "last_delivered_at",
            "created_at",
        ]
        validators = []  # the service checks uniqueness and webhook completeness


class SubscriptionUpdateSerializer(StrictModelSerializer):
    class Meta:
        model = Subscription
        fields = ["endpoint", "secret_ref", "is_active"]


class SchemaReferenceSerializer(StrictSerializer):
    """A reference to another subject's version, as the Schema Registry API takes it."""

    name = serializers.CharField(
        max_length=500,
        help_text="The name the schema uses for it: an Avro type's full name, or a JSON "
        "Schema $ref's URI.",
    )
    subject = serializers.CharField(
        max_length=500,
        help_text="The referenced subject: <topic>-value, <topic>-key, or a record's subject.",
    )
    version = serializers.IntegerField(
        min_value=-1, max_value=2**31 - 1, help_text="The subject's version; -1 for its latest."
    )


# No defaults in what a release sends: its model is hashed as it was sent
# (apps.registry.versions.sync), so a field added here must not change an older
# release's model.
def _schema_type(what: str):
    return serializers.ChoiceField(
        choices=SCHEMA_TYPES,
        required=False,
        help_text=f"JSON (JSON Schema, when absent), AVRO or PROTOBUF: the {what}'s schema type.",
    )


def _references(what: str, refused: str = "refuses the release (400)"):
    return SchemaReferenceSerializer(
        many=True,
        required=False,
        help_text=f"Other subjects' versions the {what}'s schema uses (an Avro named type, "
        "a Protobuf import, a JSON Schema $ref), resolved as the Schema Registry API "
        "resolves them: a reference naming no live version of a subject of the same schema "
        f"type {refused}, code invalid_schema_reference.",
    )


# A schema's data contract in a release, kept on its version as the Schema Registry API
# keeps a registration's (apps.registry.versions.contracts); checked there, so that a
# release and a registration are refused for the same contracts.
def _metadata(what: str):
    return serializers.JSONField(
        required=False,
        help_text=f"The {what}'s data-contract metadata: {{tags, properties, sensitive}}.",
    )


def _rule_set(what: str):
    return serializers.JSONField(
        required=False,
        help_text=f"The {what}'s data-contract rules: {{migrationRules, domainRules, "
        "encodingRules}.",
    )


class SyncKeySerializer(StrictSerializer):
    """A topic's key schema in a release: the `<topic>-key` subject."""

    schema_type = _schema_type("key")
    schema = serializers.JSONField(
        help_text="The key's schema (the topic's <topic>-key subject), as an object or as text."
    )
    references = _references("key")
    metadata = _metadata("key")
    ruleSet = _rule_set("key")  # the Schema Registry API's name


class SyncTopicSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)
    description = serializers.CharField(required=False, allow_blank=True, max_length=255)
    producers = serializers.ListField(child=serializers.SlugField(max_length=100), required=False)
    consumers = serializers.ListField(child=serializers.SlugField(max_length=100), required=False)
    schema_type = _schema_type("payload")
    schema = serializers.JSONField(
        help_text="The payload's schema (the topic's <topic>-value subject): a JSON Schema "
        "(Draft 4 to 2020-12; Draft 7 without $schema), with schema_type AVRO an Avro "
        "schema, as an object or as text; with schema_type PROTOBUF a .proto file's text."
    )
    references = _references("payload")
    metadata = _metadata("payload")
    ruleSet = _rule_set("payload")  # the Schema Registry API's name
    key = SyncKeySerializer(
        required=False,
        help_text="The topic's key schema, decided as its own subject (<topic>-key) through "
        "the same gate.",
    )


class SyncReaderSerializer(StrictSerializer):
    topic = serializers.CharField(max_length=249, help_text="A topic the release consumes.")
    role = serializers.CharField(max_length=255, required=False, default="value")
    schema_type = serializers.ChoiceField(choices=SCHEMA_TYPES, required=False, default="JSON")
    schema = serializers.JSONField(
        help_text="The reader schema the release's code reads the topic with."
    )
    references = _references("reader", "rejects this reader")


class ModelSyncSerializer(StrictSerializer):
    release = serializers.CharField(max_length=200, help_text="The release's identifier.")
    service = serializers.SlugField(
        max_length=100, required=False, help_text="The releasing service (operators only)."
    )
    topics = SyncTopicSerializer(many=True, required=False, default=list)
    reads = SyncReaderSerializer(
        many=True,
        required=False,
        help_text="The reader schema of each topic the release consumes.",
    )

    def validate(self, attrs):
        if not attrs.get("topics") and not attrs.get("reads"):
            raise serializers.ValidationError(
                {"topics": "A release names the topics it produces or the readers it declares."},
                code=RegistryCode.EMPTY_RELEASE,
            )
        return attrs


class ReaderSchemaSerializer(StrictModelSerializer):
    service = serializers.SlugRelatedField(slug_field="name", read_only=True)
    topic = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = ReaderSchema
        fields = [
            "id",
            "service",
            "topic",
            "role",
            "release",
            "schema_type",
            "schema",
            "references",
            "fingerprint",
            "declared_at",
        ]
        read_only_fields = fields


class ReaderDeclareSerializer(StrictSerializer):
    service = serializers.CharField(
        max_length=100,
        required=False,
        help_text="The consumer declaring (operators only; a service account is its own).",
    )
    release = serializers.CharField(max_length=200)
    role = serializers.CharField(max_length=255, required=False, default="value")
    schema_type = serializers.ChoiceField(choices=SCHEMA_TYPES, required=False, default="JSON")
    schema = serializers.JSONField()
    references = _references("reader", "is refused (422)")


class SchemaVersionSerializer(StrictModelSerializer):
    topic = serializers.SlugRelatedField(slug_field="name", read_only=True)
    submitted_by = serializers.SlugRelatedField(slug_field="name", read_only=True)
    awaiting = serializers.SerializerMethodField()
    reads_it = serializers.SerializerMethodField()
    readers = serializers.SerializerMethodField()
    acknowledgements = serializers.SerializerMethodField()

    class Meta:
        model = SchemaVersion
        fields = [
            "id",
            "topic",
            "version",
            "state",
            "schema",
            "fingerprint",
            "verdict",
            "submitted_by",
            "release",
            "override_reason",
            "awaiting",
            "reads_it",
            "readers",
            "acknowledgements",
            "created_at",
            "published_at",
        ]
        read_only_fields = fields

    def get_awaiting(self, version) -> list[str]:
        if version.state != SchemaVersion.State.AWAITING:
            return []
        return version.awaiting_consumers

    def get_reads_it(self, version) -> list[str]:
        return version.reads_it

    def get_readers(self, version) -> list[dict]:
        """Each consumer's verdict on a breaking version: whether its reader reads it."""
        return version.reader_verdicts

    def get_acknowledgements(self, version) -> list[dict]:
        return [
            {
                "consumer": ack.consumer.name,
                "acknowledged_by": ack.acknowledged_by,
                "acknowledged_at": ack.acknowledged_at,
                "withdrawn_at": ack.withdrawn_at,
            }
            for ack in version.acknowledgements.all()
        ]


class AcknowledgeSerializer(StrictSerializer):
    consumer = serializers.SlugRelatedField(slug_field="name", queryset=Service.objects.all())


class OverrideSerializer(StrictSerializer):
    reason = serializers.CharField()


class WithdrawSerializer(StrictSerializer):
    """Why the producer takes its waiting version back (optional): told to its consumers."""

    reason = serializers.CharField(required=False, allow_blank=True)
