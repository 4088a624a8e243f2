"""The Confluent Schema Registry REST API, for unmodified Confluent-compatible clients.

Served under /api/schema-registry/. A subject is named as Kafka clients name it
(apps.registry.subjects: `<topic>-value`, `<topic>-key`, `<record>`,
`<topic>-<record>`) and means a Steward topic and a role; a schema id is a Steward
schema version's id. Registering goes through the same gate as ModelSync: a breaking
schema answers 409 and names the consumers that have not acknowledged it. Registering
never makes the caller a producer of the topic (only ModelSync or an operator does), and
on a topic that has producers only they (and operators) may register or change its
compatibility level.

Errors take the registry's shape, `{"error_code": …, "message": …}`, on every path,
unknown ones included, with its codes (40401 subject not found, 40402 version not
found, 40403 schema not found, 42201 invalid schema, 42202 invalid version, 42203
invalid compatibility level, 40301 forbidden, 409 incompatible). Clients send HTTP
Basic: the service account's name and one of its tokens.
"""

from __future__ import annotations

import json

from django.db.models import ProtectedError
from django.http import Http404, HttpResponse
from drf_spectacular.plumbing import build_array_type, build_basic_type
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import exceptions, serializers
from rest_framework.parsers import JSONParser
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.permissions import PLATFORM
from apps.core.api.views import StewardAccessMixin
from apps.core.errors import Conflict
from apps.registry import (
    avro,
    compatibility,
    schema_types,
    schemas,
    selectors,
    services,
    subjects,
)
from apps.registry.models import REGISTRY_MODES, SchemaReference, SchemaVersion, Topic
from apps.registry.schema_text import schema_text
from apps.registry.services import (
    NotPermitted,
    require_operator,
    require_produces,
    service_ensure,
    topic_create,
)

SCHEMA_TYPES = list(schema_types.TYPES)


class RegistryError(Exception):
    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


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


class Registered(serializers.Serializer):
    subject = serializers.CharField(required=False)
    id = serializers.IntegerField()
    version = serializers.IntegerField()
    schema = serializers.CharField()
    schemaType = serializers.CharField()  # noqa: N815
    references = ReferenceIn(many=True, required=False, help_text="Only when it has any.")


class SchemaText(serializers.Serializer):
    schema = serializers.CharField()
    schemaType = serializers.CharField()  # noqa: N815
    references = ReferenceIn(many=True, required=False, help_text="Only when it has any.")


class SubjectVersionOut(serializers.Serializer):
    subject = serializers.CharField()
    version = serializers.IntegerField()


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
    422: _error(
        "Invalid schema (42201; an unknown reference too), compatibility level (42203) or "
        "a referenced schema's deletion (42206)."
    ),
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


def _subject(subject: str) -> subjects.Subject:
    try:
        return subjects.parse(subject)
    except subjects.InvalidSubject:
        raise RegistryError(404, 40401, f"Subject '{subject[:300]}' not found.") from None


def _topic(subject: str, *, deleted: bool = False) -> tuple[Topic, str]:
    """The subject's topic and role; 40401 when it has no (live, unless `deleted`) version."""
    named = _subject(subject)
    topic = selectors.topic_by_name(named.topic)
    found = topic is not None and (
        selectors.published_versions(topic, named.role, deleted=deleted).exists()
    )
    if not found:
        raise RegistryError(404, 40401, f"Subject '{subject[:300]}' not found.")
    return topic, named.role


def _number(version: str) -> int:
    if version.isdigit() and 0 < int(version) < 2**31:
        return int(version)
    raise RegistryError(
        422,
        42202,
        f"The specified version '{version[:50]}' is not a valid version id. Allowed "
        'values are between [1, 2^31-1] and the string "latest"',
    )


def _version(
    topic: Topic, version: str, role: str = "value", *, deleted: bool = False
) -> SchemaVersion:
    versions = selectors.published_versions(topic, role, deleted=deleted)
    if version in ("latest", "-1"):
        found = versions.last()
    elif version.isdigit() and 0 < int(version) < 2**31:
        found = versions.filter(version=int(version)).first()
    else:
        raise RegistryError(
            422,
            42202,
            f"The specified version '{version[:50]}' is not a valid version id. Allowed "
            'values are between [1, 2^31-1] and the string "latest"',
        )
    if found is None:
        raise RegistryError(404, 40402, f"Version {version} not found.")
    return found


def _by_id(schema_id: int) -> SchemaVersion:
    found = selectors.published_version_by_id(schema_id) if schema_id < 2**63 else None
    if found is None:
        raise RegistryError(404, 40403, "Schema not found")
    return found


def _subject_name(version: SchemaVersion) -> str:
    return subjects.subject_of(version.topic.name, version.role)


def _references_out(references: list[SchemaReference]) -> list[dict]:
    return [
        {"name": r.name, "subject": _subject_name(r.referenced), "version": r.referenced.version}
        for r in references
    ]


def _document(version: SchemaVersion, references: list[SchemaReference]):
    """The version's schema as it was registered: stored bundled with what its references
    name (compatibility.bundle, avro.bundle), it is answered with the names again."""
    if not references:
        return version.schema
    if version.schema_type == "AVRO":
        return avro.unbundle(version.canonical, _named(r.referenced for r in references))
    return compatibility.unbundle(version.schema, [r.name for r in references])


def _named(versions) -> dict:
    """The named types the referenced Avro versions define, by full name."""
    found: dict = {}
    for version in versions:
        found.update(avro.named_types(version.canonical))
    return found


def _text(version: SchemaVersion, references: list[SchemaReference]) -> str:
    """The schema's string as the reference registry answers it (apps.registry.schema_text),
    kept when the version was registered. A version registered before that is answered
    from its stored document: an Avro schema written as the reference writes it, a JSON
    Schema with its keys sorted, as it always was."""
    if version.text:
        return version.text
    document = _document(version, references)
    if version.schema_type == "AVRO":
        return schema_text("AVRO", document, named=_named(r.referenced for r in references))
    return compatibility.canonical(document)


def _schema_string(version: SchemaVersion) -> HttpResponse:
    """`…/schema`: the schema's string itself as the body, as the reference answers it."""
    references = selectors.references_of([version.pk]).get(version.pk, [])
    return HttpResponse(_text(version, references), content_type="application/json")


def _registered(
    version: SchemaVersion,
    subject: str | None = None,
    references: list[SchemaReference] | None = None,
) -> dict:
    """A version as the reference answers it; `references` (read for the version when not
    given) only when it has any, as the reference leaves an empty list out."""
    if references is None:
        references = selectors.references_of([version.pk]).get(version.pk, [])
    answer = {
        "id": version.identity_id,
        "version": version.version,
        "schema": _text(version, references),
        "schemaType": version.schema_type,
    }
    if subject is not None:
        answer["subject"] = subject
    if references:
        answer["references"] = _references_out(references)
    return answer


def _invalid_reference(message: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema: {message}")


def _resolve_references(raw, kind: str, *, lock: bool) -> list[tuple[str, SchemaVersion]]:
    """(name, referenced version) of each reference, in the order given. A reference names
    a live (published, not soft-deleted) version of a subject of the same schema type; any
    other is an invalid schema (42201), as the reference registry answers a reference it
    cannot resolve. `lock` holds the versions against a concurrent delete until commit."""
    if raw in (None, []):
        return []
    if not isinstance(raw, list):
        raise _invalid_reference("'references' is a list of {name, subject, version}")
    resolved, names = [], set()
    for n, item in enumerate(raw):
        where = f"reference {n}"
        if not isinstance(item, dict):
            raise _invalid_reference(f"{where} is not an object")
        name, subject, number = item.get("name"), item.get("subject"), item.get("version")
        if not isinstance(name, str) or not name or len(name) > 500:
            raise _invalid_reference(f"{where} has no name (1-500 characters)")
        if name in names:
            raise _invalid_reference(f"two references are named {name[:100]!r}")
        names.add(name)
        if not isinstance(subject, str) or not subject:
            raise _invalid_reference(f"{where} ({name[:100]}) names no subject")
        if number in (-1, "latest"):
            number = None
        elif type(number) is not int or not 0 < number < 2**31:
            raise _invalid_reference(f"{where} ({name[:100]}) has no valid version")
        try:
            named = subjects.parse(subject)
            target = selectors.reference_target(named.topic, named.role, number, lock=lock)
        except subjects.InvalidSubject:
            target = None
        if target is None:
            raise _invalid_reference(
                f"no schema reference found for subject {subject[:300]!r} and version "
                f"{'latest' if number is None else number} ({name[:100]})"
            )
        if target.schema_type != kind:
            raise _invalid_reference(
                f"reference {name[:100]!r} is a {target.schema_type} schema, not {kind}"
            )
        resolved.append((name, target))
    return resolved


def _json_document(text: str):
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise compatibility.InvalidSchema(f"not JSON: {exc}") from None


def _schema_of(request, *, lock: bool = False) -> schema_types.Parsed:
    """The body's schema, parsed: bundled with the schemas its references name."""
    return _schema_and_references(request, lock=lock)[0]


def _schema_and_references(request, *, lock: bool = False):
    body = _body(request)
    kind = body.get("schemaType") or "AVRO"  # the reference registry's default type
    if kind not in SCHEMA_TYPES:
        raise RegistryError(
            422,
            42201,
            f"Invalid schema type {str(kind)[:50]!r}: Steward's registry supports "
            f"{', '.join(SCHEMA_TYPES)}.",
        )
    text = body.get("schema", "")
    if not isinstance(text, str):
        raise RegistryError(422, 42201, "Invalid schema: 'schema' is the schema as text.")
    resolved = _resolve_references(body.get("references"), kind, lock=lock)
    # how the reference writes the schema's string (Parsed.text): from the text as sent
    normalize = _flag(request, "normalize")
    try:
        if not resolved:
            return schema_types.parse(kind, text, normalize=normalize), resolved
        if kind == "AVRO":
            bundled = avro.bundle(text, [(name, v.canonical) for name, v in resolved])
            named = _named(v for _, v in resolved)
            parsed = schema_types.parse(
                kind, bundled.normal_form(), sent=text, named=named, normalize=normalize
            )
            return parsed, resolved
        document = _json_document(text)
        bundled = compatibility.bundle(document, [(name, v.schema) for name, v in resolved])
        return schema_types.parse(kind, bundled, sent=text, normalize=normalize), resolved
    except compatibility.InvalidSchema as exc:
        raise RegistryError(422, 42201, f"Invalid schema: {exc.reason}") from None


def _flag(request, name: str) -> bool:
    return request.query_params.get(name, "").lower() == "true"


STRINGS = build_array_type(build_basic_type(OpenApiTypes.STR))
INTS = build_array_type(build_basic_type(OpenApiTypes.INT))


class Subjects(ConfluentView):
    @extend_schema(tags=TAG, responses={200: STRINGS, **ERRORS})
    def get(self, request):
        """Every subject with a published version (`deleted=true`: soft-deleted ones too)."""
        found = selectors.subjects_with_published_versions(deleted=_flag(request, "deleted"))
        return Response(sorted(subjects.subject_of(topic, role) for topic, role in found))


class Subject(ConfluentView):
    @extend_schema(tags=TAG, request=SchemaIn, responses={200: Registered, **ERRORS})
    def post(self, request, subject):
        """Look a schema up under the subject."""
        topic, role = _topic(subject)
        # with its references: bundled as registering bundles
        parsed, resolved = _schema_and_references(request)
        versions = selectors.published_versions(topic, role)
        found = versions.filter(fingerprint=parsed.fingerprint).last()
        if found is None:  # the string the registry answers, sent back (schemas._decide)
            answered = selectors.versions_answered_as(
                versions.filter(text=parsed.text),
                parsed.text,
                parsed.kind,
                _reference_key(resolved),
            )
            found = answered[-1] if answered else None
        if found is None:
            raise RegistryError(404, 40403, "Schema not found")
        answer = _registered(found, subject)
        # the reference answers the string of the schema looked up, with the found one's id
        # and version (KafkaSchemaRegistry.lookUpSchemaUnderSubject)
        answer["schema"] = parsed.text
        return Response(answer)

    @extend_schema(tags=TAG, responses={200: INTS, **ERRORS})
    def delete(self, request, subject):
        """Soft-delete the subject's versions, or (`permanent=true`) remove a subject soft
        deleted before: the version numbers. The topic's producers and operators only."""
        named = _subject(subject)
        topic = selectors.topic_by_name(named.topic)
        if topic is None:
            raise RegistryError(404, 40401, f"Subject '{subject[:300]}' not found.")
        _writable(topic, named.role, subject)
        _may_delete(request, topic)
        _referenced_refused(
            subject, list(selectors.published_versions(topic, named.role, deleted=True))
        )
        return Response(
            _deleting(
                schemas.subject_delete,
                actor=request.actor,
                topic=topic,
                role=named.role,
                subject=subject,
                permanent=_flag(request, "permanent"),
            )
        )


def _referenced_refused(subject: str, versions: list[SchemaVersion]) -> None:
    """42206 when another schema references one of the versions, soft or hard deleting
    alike: a referencing version, even soft-deleted, is still served by id, and reading
    its data needs what it references. Hard-deleting the referencing versions frees them.
    Asked after the caller is known to be allowed to delete (40301 first, as the service
    asks it), so that a caller who may not learns nothing of the references."""
    held = selectors.referenced_among([v.pk for v in versions], lock=True)
    for version in versions:
        if version.pk in held:
            ids = ", ".join(str(i) for i in held[version.pk])
            raise RegistryError(
                422,
                42206,
                f"One or more references exist to the schema {{subject={subject[:300]}, "
                f"version={version.version}}}: referenced by the schemas of ids {ids}.",
            )


def _may_delete(request, topic: Topic) -> None:
    """As schemas' deletes ask it: on a topic that has producers, only they and operators."""
    if topic.producers.exists():
        _require_produces(request, topic)


def _deleting(delete, **kwargs):
    try:
        return delete(**kwargs)
    except ProtectedError:
        # the database's word on a reference made meanwhile; the check before is the rule
        raise RegistryError(
            422, 42206, f"One or more references exist to the schema {kwargs['subject'][:300]}."
        ) from None
    except NotPermitted as exc:
        raise RegistryError(403, 40301, str(exc)) from None
    except schemas.DeletionRefused as exc:
        raise RegistryError(exc.status, exc.registry_code, exc.detail) from None


class SubjectVersions(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_subject_version_numbers",
        responses={200: INTS, **ERRORS},
    )
    def get(self, request, subject):
        deleted = _flag(request, "deleted")
        topic, role = _topic(subject, deleted=deleted)
        versions = selectors.published_versions(topic, role, deleted=deleted)
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
        consumers still to acknowledge when it is breaking. With `normalize=true` the schema
        answered afterwards is its normalized string, as the reference writes it (sorted
        keys for JSON Schema; Avro's normalized form); a schema's id does not depend on
        it. `references` name other
        subjects' versions the schema uses; the same schema with the same references is the
        same version."""
        parsed, resolved = _schema_and_references(request, lock=True)
        try:
            named = subjects.parse(subject)
        except subjects.InvalidSubject as exc:
            raise RegistryError(422, 42201, str(exc)) from None
        topic = selectors.topic_for_registering(named.topic)
        if topic is not None and topic.produced:
            _require_produces(request, topic)
        # the mode and the level, both registry-wide settings, in one read
        defaults = selectors.registry_defaults()
        mode = _writable(topic, named.role, subject, defaults)
        account = request.service_account
        service = service_ensure(
            actor=request.actor, name=account.name if account else request.user.username
        )
        # what registering and importing alike are told of the schema and its subject
        given = {
            "actor": request.actor,
            "service": service,
            "topic_name": named.topic,
            "role": named.role,
            "parsed": parsed,
            "references": _reference_key(resolved),
        }
        body = request.data
        if mode == "IMPORT" or body.get("id") is not None:
            return Response(_import(given, body, mode, subject, resolved))
        try:
            answer = schemas.schema_register(
                **given,
                release=f"schema-registry:{subject}:{parsed.fingerprint}",
                defaults=defaults,
                absent=topic is None,
            )
        except Conflict as exc:
            raise RegistryError(409, 409, exc.detail) from None
        if answer.outcome == "rejected":
            raise RegistryError(422, 42201, f"Invalid schema: {answer.reason}")
        if answer.outcome == "refused":
            raise RegistryError(409, 409, answer.reason)
        version, references = answer.row, None
        if answer.outcome != "unchanged":
            # a waiting version holds its references too: it may yet be published
            references = services.schema_references_record(version, resolved)
        answer = answer.as_dict()
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
        return Response(_registered(version, subject, references))


def _writable(topic: Topic | None, role: str, subject: str, defaults=None) -> str:
    """The subject's mode, when it lets a schema be written (42205 when read-only)."""
    mode = selectors.registry_mode_of(topic, role, defaults)
    if mode in ("READONLY", "READONLY_OVERRIDE"):
        raise RegistryError(422, 42205, f"Subject {subject[:300]} is in read-only mode")
    return mode


def _import(given: dict, body: dict, mode: str, subject: str, resolved) -> dict:
    """Register with the id and version given: only a subject in IMPORT mode may."""
    if mode != "IMPORT":
        raise RegistryError(
            422, 42205, f"Subject {subject[:300]} is not in import mode: no id may be given"
        )
    schema_id, number = body.get("id"), body.get("version")
    valid = all(type(n) is int and 0 < n < 2**31 for n in (schema_id, number))
    if not valid:
        raise RegistryError(
            422, 42205, "In import mode, give the schema's id and version (positive integers)."
        )
    try:
        version = schemas.version_import(**given, schema_id=schema_id, number=number)
    except schemas.RegistryRefused as exc:
        raise RegistryError(422, exc.registry_code, exc.detail) from None
    services.schema_references_record(version, resolved)
    return _registered(version, subject)


def _reference_key(resolved) -> list[tuple[str, int]]:
    """The references as a schema's id tells schemas apart: each name and the row of the
    version it names (models.schema_identity_key)."""
    return [(name, target.pk) for name, target in resolved]


def _require_produces(request, topic: Topic) -> None:
    try:
        require_produces(request.actor, topic)
    except NotPermitted as exc:
        raise RegistryError(403, 40301, str(exc)) from None


class SubjectVersion(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_subject_version",
        responses={200: Registered, **ERRORS},
    )
    def get(self, request, subject, version):
        deleted = _flag(request, "deleted")
        topic, role = _topic(subject, deleted=deleted)
        return Response(_registered(_version(topic, version, role, deleted=deleted), subject))

    @extend_schema(tags=TAG, responses={200: OpenApiTypes.INT, **ERRORS})
    def delete(self, request, subject, version):
        """Soft-delete a version, or (`permanent=true`) remove one soft-deleted before; a
        version the topic's consumers read is refused (42206)."""
        topic, role = _topic(subject, deleted=True)
        _writable(topic, role, subject)
        if version in ("latest", "-1"):
            number = _version(topic, version, role).version
        else:
            number = _number(version)
        _may_delete(request, topic)
        _referenced_refused(
            subject,
            list(selectors.published_versions(topic, role, deleted=True).filter(version=number)),
        )
        return Response(
            _deleting(
                schemas.version_delete,
                actor=request.actor,
                topic=topic,
                role=role,
                number=number,
                subject=subject,
                permanent=_flag(request, "permanent"),
            )
        )


class SubjectVersionSchema(ConfluentView):
    @extend_schema(tags=TAG, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, subject, version):
        """The version's schema itself, nothing around it."""
        topic, role = _topic(subject)
        found = _version(topic, version, role)
        return _schema_string(found)


class ReferencedBy(ConfluentView):
    @extend_schema(tags=TAG, responses={200: INTS, **ERRORS})
    def get(self, request, subject, version):
        """The ids of the schemas that reference this version."""
        topic, role = _topic(subject)
        return Response(selectors.referencing_ids(_version(topic, version, role)))


class SchemaList(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_schemas",
        responses={200: Registered(many=True), **ERRORS},
    )
    def get(self, request):
        """Every published schema, with its subject (`subjectPrefix` filters them)."""
        prefix = request.query_params.get("subjectPrefix", "")
        versions = [
            v for v in selectors.published_version_list() if _subject_name(v).startswith(prefix)
        ]
        references = selectors.references_of(v.pk for v in versions)  # one query for all
        found = [_registered(v, _subject_name(v), references.get(v.pk, [])) for v in versions]
        return Response(sorted(found, key=lambda r: (r["subject"], r["version"])))


class SchemaById(ConfluentView):
    @extend_schema(tags=TAG, responses={200: SchemaText, **ERRORS})
    def get(self, request, schema_id):
        found = _by_id(schema_id)
        answer = _registered(found)
        return Response(
            {k: answer[k] for k in ("schema", "schemaType", "references") if k in answer}
        )


class SchemaByIdText(ConfluentView):
    @extend_schema(tags=TAG, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, schema_id):
        """The schema of that id itself."""
        found = _by_id(schema_id)
        return _schema_string(found)


def _uses(request, schema_id: int) -> list[SchemaVersion]:
    """Every subject-version whose schema has the id (`deleted=true`: soft-deleted ones
    too); 40403 when none."""
    found = selectors.versions_of_schema_id(schema_id, deleted=_flag(request, "deleted"))
    if not found:
        raise RegistryError(404, 40403, "Schema not found")
    return found


class SchemaByIdSubjects(ConfluentView):
    @extend_schema(tags=TAG, responses={200: STRINGS, **ERRORS})
    def get(self, request, schema_id):
        """The subjects that registered the schema of that id."""
        return Response(sorted({_subject_name(v) for v in _uses(request, schema_id)}))


class SchemaByIdVersions(ConfluentView):
    @extend_schema(tags=TAG, responses={200: SubjectVersionOut(many=True), **ERRORS})
    def get(self, request, schema_id):
        """Every subject-version that registered the schema of that id."""
        found = [
            {"subject": _subject_name(v), "version": v.version} for v in _uses(request, schema_id)
        ]
        return Response(sorted(found, key=lambda r: (r["subject"], r["version"])))


class SchemaTypes(ConfluentView):
    @extend_schema(tags=TAG, responses={200: STRINGS, **ERRORS})
    def get(self, request):
        return Response(SCHEMA_TYPES)


class Contexts(ConfluentView):
    @extend_schema(tags=TAG, responses={200: STRINGS, **ERRORS})
    def get(self, request):
        """The contexts: only the default one."""
        return Response(["."])


class ModeIn(serializers.Serializer):
    mode = serializers.ChoiceField(choices=REGISTRY_MODES)


def _mode_in(request) -> str:
    mode = str(_body(request).get("mode", "")).upper()
    if mode not in REGISTRY_MODES:
        raise RegistryError(
            422,
            42204,
            "Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE, and IMPORT",
        )
    return mode


def _operator(call, **kwargs):
    try:
        return call(**kwargs)
    except NotPermitted as exc:
        raise RegistryError(403, 40301, str(exc)) from None
    except schemas.RegistryRefused as exc:
        raise RegistryError(422, exc.registry_code, exc.detail) from None


class Mode(ConfluentView):
    @extend_schema(tags=TAG, operation_id="schema_registry_mode", responses={200: ModeIn})
    def get(self, request):
        """The registry's mode."""
        return Response({"mode": selectors.global_registry_mode()})

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_mode_set",
        request=ModeIn,
        responses={200: ModeIn, **ERRORS},
    )
    def put(self, request):
        """The registry's mode: operators only."""
        mode = _mode_in(request)
        _operator(schemas.set_registry_default, actor=request.actor, key="mode", value=mode)
        return Response({"mode": mode})

    @extend_schema(
        tags=TAG, operation_id="schema_registry_mode_reset", responses={200: ModeIn, **ERRORS}
    )
    def delete(self, request):
        before = selectors.global_registry_mode()
        _operator(schemas.set_registry_default, actor=request.actor, key="mode", value=None)
        return Response({"mode": before})


class SubjectMode(ConfluentView):
    @extend_schema(tags=TAG, responses={200: ModeIn, **ERRORS})
    def get(self, request, subject):
        """The mode the subject is in; with `defaultToGlobal=false`, only its own (40409
        when it has none)."""
        named = _subject(subject)
        topic = selectors.topic_by_name(named.topic)
        own = request.query_params.get("defaultToGlobal", "").lower() == "false"
        if own and not selectors.own_registry_mode(topic, named.role):
            raise RegistryError(
                404, 40409, f"Subject '{subject[:300]}' does not have subject-level mode configured"
            )
        return Response({"mode": selectors.registry_mode_of(topic, named.role)})

    @extend_schema(tags=TAG, request=ModeIn, responses={200: ModeIn, **ERRORS})
    def put(self, request, subject):
        """The subject's own mode (its topic's other subjects keep theirs): the topic's
        producers and operators. IMPORT only on a subject with no version yet, unless
        `force=true`."""
        mode = _mode_in(request)
        topic = _topic_for_setting(request, subject)
        _operator(
            schemas.set_registry_mode,
            actor=request.actor,
            topic=topic,
            role=_subject(subject).role,
            mode=mode,
            force=_flag(request, "force"),
        )
        return Response({"mode": mode})

    @extend_schema(tags=TAG, responses={200: ModeIn, **ERRORS})
    def delete(self, request, subject):
        """The subject's own mode removed (answered): it follows the registry's again.
        40401 when it had none, as the reference answers."""
        named = _subject(subject)
        topic = selectors.topic_by_name(named.topic)
        before = selectors.own_registry_mode(topic, named.role)
        if not before:
            raise RegistryError(404, 40401, f"Subject '{subject[:300]}' not found.")
        _operator(
            schemas.set_registry_mode, actor=request.actor, topic=topic, role=named.role, mode=""
        )
        return Response({"mode": before})


def _topic_for_setting(request, subject: str) -> Topic:
    """The subject's topic, created (by an operator only) when a migration sets the mode
    of a subject it is about to import."""
    named = _subject(subject)
    topic = selectors.topic_by_name(named.topic)
    if topic is not None:
        return topic
    try:
        require_operator(request.actor)
    except NotPermitted:
        raise RegistryError(404, 40401, f"Subject '{subject[:300]}' not found.") from None
    return topic_create(actor=request.actor, name=named.topic)


def _compatibility(request, kind_of: str | None, against: list, *, mode: str, policy: str):
    """`{is_compatible}` of the body's schema against `against` (published versions,
    oldest first), `messages` with `verbose=true`."""
    parsed = _schema_of(request)
    if kind_of is not None and parsed.kind != kind_of:
        raise RegistryError(422, 42201, f"The subject's schemas are {kind_of}, not {parsed.kind}.")
    verdict = schema_types.check(
        parsed.kind, parsed.checked, [v.schema for v in against], mode=mode, policy=policy
    )
    answer = {"is_compatible": verdict.compatible}
    if _flag(request, "verbose"):
        answer["messages"] = [f"{d.kind} at {d.path}: {d.message}" for d in verdict.breaking]
    return Response(answer)


class Compatibility(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_compatibility_subjects_versions_create",
        request=SchemaIn,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def post(self, request, subject, version):
        """The schema against one version, in the topic's level's direction."""
        topic, role = _topic(subject)
        against = _version(topic, version, role)
        return _compatibility(
            request,
            against.schema_type,
            [against],
            mode=selectors.mode_of(topic).removesuffix("_TRANSITIVE"),
            policy=topic.compatibility_policy,
        )


class CompatibilityAll(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_compatibility_subject",
        request=SchemaIn,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def post(self, request, subject):
        """The schema against the subject's versions as registering would check it: the
        latest, or every one under a transitive level. A subject with no version has
        nothing to be incompatible with, as the reference answers."""
        named = _subject(subject)
        topic = selectors.topic_by_name(named.topic)
        versions = list(selectors.published_versions(topic, named.role)) if topic else []
        if not versions:
            _schema_of(request)  # still a valid schema, or 42201
            return Response(
                {"is_compatible": True, **({"messages": []} if _flag(request, "verbose") else {})}
            )
        return _compatibility(
            request,
            versions[-1].schema_type,
            versions,
            mode=selectors.mode_of(topic),
            policy=topic.compatibility_policy,
        )


class Config(ConfluentView):
    """The registry's default compatibility level: an operator's, else Steward's
    configuration (STEWARD_REGISTRY_DEFAULT_MODE)."""

    @extend_schema(
        tags=TAG, operation_id="schema_registry_default_config", responses={200: Level, **ERRORS}
    )
    def get(self, request):
        return Response({"compatibilityLevel": selectors.default_mode()})

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_default_config_set",
        request=LevelIn,
        responses={200: LevelIn, **ERRORS},
    )
    def put(self, request):
        """Operators only; a lowered level is announced on every topic that follows it."""
        level = str(_body(request).get("compatibility", "")).upper()
        if level not in compatibility.MODES:
            raise RegistryError(422, 42203, f"Invalid compatibility level '{level[:50]}'.")
        _operator(
            schemas.set_registry_default, actor=request.actor, key="compatibility", value=level
        )
        return Response({"compatibility": level})

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_default_config_reset",
        responses={200: Level, **ERRORS},
    )
    def delete(self, request):
        before = selectors.default_mode()
        _operator(
            schemas.set_registry_default, actor=request.actor, key="compatibility", value=None
        )
        return Response({"compatibilityLevel": before})


class SubjectConfig(ConfluentView):
    @extend_schema(tags=TAG, responses={200: Level, **ERRORS})
    def get(self, request, subject):
        """The subject's level; the default where it has none, unless
        `defaultToGlobal=false` asks for its own only (40408 when it has none)."""
        topic, _ = _topic(subject)
        own = request.query_params.get("defaultToGlobal", "").lower() == "false"
        if own and not topic.compatibility_mode:
            raise RegistryError(
                404,
                40408,
                f"Subject '{subject[:300]}' does not have subject-level compatibility configured",
            )
        return Response({"compatibilityLevel": selectors.mode_of(topic)})

    @extend_schema(tags=TAG, responses={200: Level, **ERRORS})
    def delete(self, request, subject):
        """Back to the default level (audited, and announced if that lowers it)."""
        topic, _ = _topic(subject)
        before = selectors.mode_of(topic)
        _require_produces(request, topic)
        schemas.set_mode(actor=request.actor, topic=topic, mode="")
        return Response({"compatibilityLevel": before})

    @extend_schema(tags=TAG, request=LevelIn, responses={200: LevelIn, **ERRORS})
    def put(self, request, subject):
        """A topic's compatibility level: its producers' and operators' to change."""
        level = str(_body(request).get("compatibility", "")).upper()
        if level not in compatibility.MODES:
            raise RegistryError(422, 42203, f"Invalid compatibility level '{level[:50]}'.")
        topic, _ = _topic(subject)
        _require_produces(request, topic)
        schemas.set_mode(actor=request.actor, topic=topic, mode=level)
        return Response({"compatibility": level})


class UnknownPath(ConfluentView):
    """Any other path under the API: the registry's 404, never an HTML page."""

    schema = None  # not an operation of the API

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        raise RegistryError(404, 404, "HTTP 404 Not Found")
