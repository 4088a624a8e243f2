"""The part of the Confluent Schema Registry REST API that JSON Schema clients use.

Served under /api/schema-registry/ so an unmodified Confluent-compatible client can
read and register schemas: a subject is a topic's payload (`<topic>-value`), a
schema id is a Steward schema version's id. Registering goes through the same gate
as ModelSync: a breaking schema answers 409 and names the consumers that have not
acknowledged it. Errors take the registry's shape, `{"error_code": …, "message": …}`,
with its codes (40401 subject not found, 40402 version not found, 40403 schema not
found, 42201 invalid schema, 42203 invalid compatibility level). Clients send HTTP
Basic: the service account's name and one of its tokens.
"""

from __future__ import annotations

import re

from django.http import Http404
from drf_spectacular.plumbing import build_array_type, build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.permissions import PLATFORM
from apps.core.api.views import StewardAccessMixin
from apps.registry import compatibility, schemas, selectors
from apps.registry.models import SchemaVersion, Topic
from apps.registry.services import service_ensure

SUFFIX = "-value"
TOPIC_NAME = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$")  # as Topic's constraint


class RegistryError(Exception):
    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


class SchemaIn(serializers.Serializer):
    schema = serializers.CharField(help_text="The JSON Schema, as text.")
    schemaType = serializers.CharField(required=False, default="JSON")  # noqa: N815
    references = serializers.ListField(required=False)


class Registered(serializers.Serializer):
    subject = serializers.CharField(required=False)
    id = serializers.IntegerField()
    version = serializers.IntegerField()
    schema = serializers.CharField()
    schemaType = serializers.CharField()  # noqa: N815


class Level(serializers.Serializer):
    compatibilityLevel = serializers.CharField()  # noqa: N815


class LevelIn(serializers.Serializer):
    compatibility = serializers.ChoiceField(choices=compatibility.MODES)


class RegistryErrorSerializer(serializers.Serializer):
    error_code = serializers.IntegerField()
    message = serializers.CharField()


def _error(description: str) -> OpenApiResponse:
    return OpenApiResponse(response=RegistryErrorSerializer, description=description)


ERRORS = {
    400: _error("Malformed request: the body is not a JSON object (error_code 400)."),
    401: _error("No credentials, or a bad token (error_code 40101)."),
    403: _error("The caller may not use the registry (error_code 40301)."),
    404: _error("Subject (40401), version (40402) or schema (40403) not found."),
    422: _error("Invalid schema (42201) or compatibility level (42203)."),
    429: _error("Too many requests (error_code 429); `Retry-After` says when to retry."),
}
TAG = ["schema-registry (Confluent-compatible)"]


class SchemaRegistryJSONParser(JSONParser):
    media_type = "application/vnd.schemaregistry.v1+json"


class ConfluentView(StewardAccessMixin, APIView):
    parser_classes = [JSONParser, SchemaRegistryJSONParser]
    problem_responses = False  # the registry's own error shape, documented in ERRORS
    scope_app = "registry"
    steward_scope = "system"
    read_access = PLATFORM
    write_access = PLATFORM  # the compatibility test is a POST that changes nothing

    def handle_exception(self, exc):
        if isinstance(exc, RegistryError):
            return Response({"error_code": exc.code, "message": exc.message}, status=exc.status)
        if isinstance(exc, exceptions.NotAuthenticated | exceptions.AuthenticationFailed):
            return Response(
                {"error_code": 40101, "message": str(exc.detail)},
                status=401,
                headers={"WWW-Authenticate": 'Basic realm="steward"'},
            )
        if isinstance(exc, exceptions.PermissionDenied):
            return Response({"error_code": 40301, "message": str(exc.detail)}, status=403)
        if isinstance(exc, exceptions.ParseError):
            return Response({"error_code": 400, "message": str(exc.detail)}, status=400)
        if isinstance(exc, Http404):
            return Response({"error_code": 404, "message": "Not found."}, status=404)
        if isinstance(exc, exceptions.APIException):
            # The rest (throttling, media types…) in the registry's shape too: clients
            # of this API read no other.
            headers = {"Retry-After": str(int(exc.wait))} if getattr(exc, "wait", None) else {}
            message = str(exc.detail) if isinstance(exc.detail, str) else "Invalid request."
            return Response(
                {"error_code": exc.status_code, "message": message},
                status=exc.status_code,
                headers=headers,
            )
        return super().handle_exception(exc)


def _body(request) -> dict:
    if not isinstance(request.data, dict):
        raise RegistryError(400, 400, "The body must be a JSON object.")
    return request.data


def _topic(subject: str) -> Topic:
    if subject.endswith(SUFFIX):
        topic = selectors.topic_by_name(subject.removesuffix(SUFFIX))
        if topic is not None:
            return topic
    raise RegistryError(404, 40401, f"Subject '{subject}' not found.")


def _version(topic: Topic, version: str) -> SchemaVersion:
    versions = selectors.published_versions(topic)
    found = versions.last() if version in ("latest", "-1") else None
    if version.isdigit():
        found = versions.filter(version=int(version)).first()
    if found is None:
        raise RegistryError(404, 40402, f"Version {version} not found.")
    return found


def _registered(version: SchemaVersion, subject: str | None = None) -> dict:
    answer = {
        "id": version.pk,
        "version": version.version,
        "schema": version.canonical,
        "schemaType": "JSON",
    }
    if subject is not None:
        answer["subject"] = subject
    return answer


def _schema_of(request) -> dict | bool:
    body = _body(request)
    if body.get("schemaType", "JSON") != "JSON":
        raise RegistryError(422, 42201, "Steward's registry keeps JSON Schema only.")
    if body.get("references"):
        raise RegistryError(422, 42201, "Schema references are not supported.")
    try:
        return compatibility.parse_schema(body.get("schema", ""))
    except compatibility.InvalidSchema as exc:
        raise RegistryError(422, 42201, f"Invalid schema: {exc.reason}") from None


class Subjects(ConfluentView):
    @extend_schema(
        tags=TAG, responses={200: build_array_type(build_basic_type(OpenApiTypes.STR)), **ERRORS}
    )
    def get(self, request):
        names = selectors.topics_with_published_versions()
        return Response([f"{name}{SUFFIX}" for name in names])


class Subject(ConfluentView):
    @extend_schema(tags=TAG, request=SchemaIn, responses={200: Registered, **ERRORS})
    def post(self, request, subject):
        """Look a schema up under the subject."""
        topic = _topic(subject)
        fingerprint = compatibility.fingerprint(_schema_of(request))
        found = selectors.published_versions(topic).filter(fingerprint=fingerprint).last()
        if found is None:
            raise RegistryError(404, 40403, "Schema not found.")
        return Response(_registered(found, subject))


class SubjectVersions(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_subject_version_numbers",
        responses={200: build_array_type(build_basic_type(OpenApiTypes.INT)), **ERRORS},
    )
    def get(self, request, subject):
        versions = selectors.published_versions(_topic(subject))
        return Response(list(versions.values_list("version", flat=True)))

    @extend_schema(
        tags=TAG,
        request=SchemaIn,
        responses={
            200: Registered,
            409: _error("Breaking: waits for the named consumers (error_code 409)."),
            **ERRORS,
        },
    )
    def post(self, request, subject):
        """Register a schema: its id when it is (or becomes) published; 409 naming the
        consumers still to acknowledge when it is breaking."""
        schema = _schema_of(request)
        name = subject.removesuffix(SUFFIX)
        if not subject.endswith(SUFFIX) or not TOPIC_NAME.match(name):
            raise RegistryError(
                422,
                42201,
                f"Subjects are '<topic>{SUFFIX}', the topic a dotted lower-case name "
                f"(orders.order), not '{subject}'.",
            )
        account = request.service_account
        service = service_ensure(
            actor=request.actor, name=account.name if account else request.user.username
        )
        fingerprint = compatibility.fingerprint(schema)
        answer = schemas.model_sync(
            actor=request.actor,
            service=service,
            release=f"schema-registry:{name}:{fingerprint}",
            topics=[{"name": name, "producers": [service.name], "schema": schema}],
            remember=False,
        )["topics"][0]
        if answer["outcome"] == "rejected":
            raise RegistryError(422, 42201, f"Invalid schema: {answer['reason']}")
        if answer["outcome"] == "awaiting_acknowledgement":
            waiting = ", ".join(answer["awaiting"])
            breaking = "; ".join(
                f"{d['kind']} at {d['path']}" for d in answer["verdict"].get("breaking", [])
            )
            raise RegistryError(
                409,
                409,
                f"Schema being registered is incompatible with an earlier schema ({breaking}); "
                f"it waits for acknowledgement from: {waiting}.",
            )
        version = selectors.schema_version_of(name, answer["version"])
        return Response(_registered(version, subject))


class SubjectVersion(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_subject_version",
        responses={200: Registered, **ERRORS},
    )
    def get(self, request, subject, version):
        return Response(_registered(_version(_topic(subject), version), subject))


class SchemaById(ConfluentView):
    @extend_schema(tags=TAG, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, schema_id):
        found = selectors.published_version_by_id(schema_id)
        if found is None:
            raise RegistryError(404, 40403, "Schema not found.")
        return Response({"schema": found.canonical, "schemaType": "JSON"})


class Compatibility(ConfluentView):
    @extend_schema(tags=TAG, request=SchemaIn, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def post(self, request, subject, version):
        topic = _topic(subject)
        against = _version(topic, version)
        verdict = compatibility.check(
            _schema_of(request),
            [against.schema],
            mode=selectors.mode_of(topic).removesuffix("_TRANSITIVE"),
            policy=topic.compatibility_policy,
        )
        answer = {"is_compatible": verdict.compatible}
        if request.query_params.get("verbose", "").lower() == "true":
            answer["messages"] = [f"{d.kind} at {d.path}: {d.message}" for d in verdict.breaking]
        return Response(answer)


class Config(ConfluentView):
    """The default compatibility level (set in Steward's configuration)."""

    @extend_schema(
        tags=TAG, operation_id="schema_registry_default_config", responses={200: Level, **ERRORS}
    )
    def get(self, request):
        return Response({"compatibilityLevel": selectors.default_mode()})


class SubjectConfig(ConfluentView):
    @extend_schema(tags=TAG, responses={200: Level, **ERRORS})
    def get(self, request, subject):
        return Response({"compatibilityLevel": selectors.mode_of(_topic(subject))})

    @extend_schema(tags=TAG, request=LevelIn, responses={200: LevelIn, **ERRORS})
    def put(self, request, subject):
        level = str(_body(request).get("compatibility", "")).upper()
        if level not in compatibility.MODES:
            raise RegistryError(422, 42203, f"Invalid compatibility level '{level}'.")
        schemas.set_mode(actor=request.actor, topic=_topic(subject), mode=level)
        return Response({"compatibility": level})
