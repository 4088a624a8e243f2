"""The Schema Registry API's wire formats: the bodies it reads and answers, as the
reference registry writes them, and their OpenAPI description."""

from __future__ import annotations

from django.http import HttpResponse
from drf_spectacular.plumbing import build_array_type, build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer

from apps.core.views import SCHEMA_REGISTRY_MEDIA_TYPE
from apps.registry import formats, selectors, subjects
from apps.registry.models import REGISTRY_MODES, SchemaReference, SchemaVersion
from apps.registry.versions.texts import registry_text

# The reference registry answers in its own media type and reads it, its unversioned
# one and plain JSON; a client that asks for none of them in particular gets the first.
# (Core's refusals before any view answer in it too.)
MEDIA_TYPE = SCHEMA_REGISTRY_MEDIA_TYPE


class RegistryV1Renderer(JSONRenderer):
    media_type = MEDIA_TYPE


class RegistryRenderer(JSONRenderer):
    media_type = "application/vnd.schemaregistry+json"


class RegistryV1Parser(JSONParser):
    media_type = MEDIA_TYPE


class RegistryParser(JSONParser):
    media_type = "application/vnd.schemaregistry+json"


RENDERERS = [RegistryV1Renderer, RegistryRenderer, JSONRenderer]
PARSERS = [RegistryV1Parser, RegistryParser, JSONParser]


class ReferenceIn(serializers.Serializer):
    name = serializers.CharField(
        max_length=500,
        help_text="How the schema names it: a JSON Schema $ref URI, an Avro type's full name.",
    )
    subject = serializers.CharField()
    version = serializers.IntegerField(help_text="The referenced version (-1: the latest).")


class SchemaIn(serializers.Serializer):
    schema = serializers.CharField(help_text="The schema (JSON Schema or Avro), as text.")
    schemaType = serializers.CharField(required=False, default="AVRO")  # noqa: N815
    references = ReferenceIn(many=True, required=False)
    metadata = serializers.JSONField(
        required=False, help_text="Data contract: {tags, properties, sensitive}."
    )
    ruleSet = serializers.JSONField(  # noqa: N815
        required=False, help_text="Data contract: {migrationRules, domainRules, encodingRules}."
    )


class Registered(serializers.Serializer):
    subject = serializers.CharField(required=False)
    id = serializers.IntegerField()
    version = serializers.IntegerField()
    guid = serializers.UUIDField(
        required=False, help_text="The schema's GUID, from its content as the reference derives it."
    )
    schema = serializers.CharField()
    schemaType = serializers.CharField(  # noqa: N815
        required=False, help_text="Left out for AVRO, the default, as the reference does."
    )
    references = ReferenceIn(many=True, required=False, help_text="Only when it has any.")
    metadata = serializers.JSONField(required=False, help_text="Only when it has any.")
    ruleSet = serializers.JSONField(required=False, help_text="Only when it has any.")  # noqa: N815


class SchemaText(serializers.Serializer):
    schema = serializers.CharField()
    guid = serializers.UUIDField(
        required=False, help_text="The schema's GUID, from its content as the reference derives it."
    )
    schemaType = serializers.CharField(  # noqa: N815
        required=False, help_text="Left out for AVRO, the default, as the reference does."
    )
    references = ReferenceIn(many=True, required=False, help_text="Only when it has any.")
    metadata = serializers.JSONField(required=False, help_text="Only when it has any.")
    ruleSet = serializers.JSONField(required=False, help_text="Only when it has any.")  # noqa: N815
    maxId = serializers.IntegerField(  # noqa: N815
        required=False, help_text="With fetchMaxId=true: the highest schema id."
    )


class ContextId(serializers.Serializer):
    context = serializers.CharField(help_text="`.`: the default context.")
    id = serializers.IntegerField()


class SubjectVersionOut(serializers.Serializer):
    subject = serializers.CharField()
    version = serializers.IntegerField()


class Contract(serializers.Serializer):
    defaultMetadata = serializers.JSONField(required=False)  # noqa: N815
    overrideMetadata = serializers.JSONField(required=False)  # noqa: N815
    defaultRuleSet = serializers.JSONField(required=False)  # noqa: N815
    overrideRuleSet = serializers.JSONField(required=False)  # noqa: N815
    normalize = serializers.BooleanField(
        required=False, help_text="Whether registrations are normalized (normalize=true)."
    )
    alias = serializers.CharField(
        required=False, help_text="The subject this one stands for under /subjects/{subject}."
    )
    validateFields = serializers.BooleanField(  # noqa: N815
        required=False, help_text="Whether reserved fields (confluent:reserved) are enforced."
    )
    compatibilityGroup = serializers.CharField(  # noqa: N815
        required=False, help_text="The metadata property whose value groups the versions checked."
    )


class Level(Contract):
    compatibilityLevel = serializers.CharField()  # noqa: N815


class LevelIn(Contract):
    compatibility = serializers.ChoiceField(choices=formats.MODES, required=False)


class ModeIn(serializers.Serializer):
    # null: no mode (a PUT clears it and answers it so)
    mode = serializers.ChoiceField(choices=REGISTRY_MODES, allow_null=True)


class RegistryErrorSerializer(serializers.Serializer):
    error_code = serializers.IntegerField()
    message = serializers.CharField()


def error(description: str) -> OpenApiResponse:
    return OpenApiResponse(response=RegistryErrorSerializer, description=description)


ERRORS = {
    400: error("Malformed request: the body is not a JSON object (error_code 400)."),
    401: error("No credentials, or a bad token (error_code 40101)."),
    403: error("The caller may not use the registry (error_code 40301)."),
    404: error("Subject (40401), version (40402) or schema (40403) not found."),
    422: error(
        "Invalid schema (42201; an unknown reference too), compatibility level (42203), "
        "a referenced schema's deletion (42206), subject name (42208) or a body too large "
        "(42209)."
    ),
    429: error("Too many requests (error_code 429); `Retry-After` says when to retry."),
}
TAG = ["schema-registry (Confluent-compatible)"]
STRINGS = build_array_type(build_basic_type(OpenApiTypes.STR))
INTS = build_array_type(build_basic_type(OpenApiTypes.INT))


def subject_name(version: SchemaVersion) -> str:
    return subjects.subject_of(version.topic.name, version.role)


def references_out(references: list[SchemaReference]) -> list[dict]:
    return [
        {"name": r.name, "subject": subject_name(r.referenced), "version": r.referenced.version}
        for r in references
    ]


def schema_string(version: SchemaVersion) -> HttpResponse:
    """`…/schema`: the schema's string itself as the body, as the reference answers it."""
    references = selectors.references_of([version.pk]).get(version.pk, [])
    return HttpResponse(registry_text(version, references), content_type=MEDIA_TYPE)


def registered(
    version: SchemaVersion,
    subject: str | None = None,
    references: list[SchemaReference] | None = None,
    *,
    fmt: str | None = None,
) -> dict:
    """A version as the reference answers it; `references` (read for the version when not
    given) only when it has any, as the reference leaves an empty list out. `fmt`: the
    `format` asked for; `serialized` answers a Protobuf schema as the base64 of its
    descriptor (formats.serialized), as confluent-kafka's deserializer asks for it."""
    if references is None:
        references = selectors.references_of([version.pk]).get(version.pk, [])
    text = formats.serialized(version.schema_type, version.schema) if fmt == "serialized" else None
    answer = {
        "id": version.identity_id,
        "version": version.version,
        "schema": text or registry_text(version, references),
    }
    # the id's GUID, whatever form the schema is answered in, as the reference answers it
    if version.identity.guid is not None:
        answer["guid"] = str(version.identity.guid)
    # the reference leaves Avro's type out (its default; SchemaTypeConverter)
    if version.schema_type != "AVRO":
        answer["schemaType"] = version.schema_type
    if subject is not None:
        answer["subject"] = subject
    if references:
        answer["references"] = references_out(references)
    return {**answer, **contract_out(version)}


def contract_out(version: SchemaVersion) -> dict:
    """The version's data contract, as the reference answers it: only what it has."""
    found = {"metadata": version.metadata, "ruleSet": version.rule_set}
    return {k: v for k, v in found.items() if v is not None}
