"""The Schema Registry API's views: each reads its request, makes one call to the
registry's services or selectors, and answers in the wire format (`wire`); every error
in the registry's shape (`errors`)."""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.core.api.permissions import PLATFORM
from apps.core.api.views import StewardAccessMixin
from apps.registry import formats, selectors, subjects, versions
from apps.registry.confluent import wire
from apps.registry.confluent.errors import (
    RegistryError,
    registry_response,
    subject_not_found,
)
from apps.registry.models import REGISTRY_MODES, SchemaVersion, Topic
from apps.registry.versions import contracts, submitted
from apps.registry.versions.submitted import SCHEMA_TYPES

ERRORS, TAG, STRINGS, INTS = wire.ERRORS, wire.TAG, wire.STRINGS, wire.INTS
ADMIN_SCOPE = "registry:admin"


class SchemaRegistryNegotiation(DefaultContentNegotiation):
    """`?format=` is the Schema Registry API's own parameter (the form a schema is
    answered in: `serialized` for a Protobuf descriptor), not DRF's choice of renderer,
    which would answer 404 for a format it has no renderer for."""

    def filter_renderers(self, renderers, format):  # noqa: A002 (DRF's signature)
        return renderers


class ConfluentView(StewardAccessMixin, APIView):
    parser_classes = wire.PARSERS
    renderer_classes = wire.RENDERERS
    content_negotiation_class = SchemaRegistryNegotiation
    problem_responses = False  # the registry's own error shape, documented in ERRORS
    scope_app = "registry"
    steward_scope = "system"
    read_access = PLATFORM
    write_access = PLATFORM  # the compatibility test is a POST that changes nothing

    def handle_exception(self, exc):
        answer = registry_response(exc)
        return answer if answer is not None else super().handle_exception(exc)


def _body(request) -> dict:
    if not isinstance(request.data, dict):
        raise RegistryError(400, 400, "The body must be a JSON object.")
    return request.data


def _flag(request, name: str) -> bool:
    return request.query_params.get(name, "").lower() == "true"


def _int_param(request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise RegistryError(400, 400, f"{name} is a whole number.") from None


def _deleted_only(request) -> bool:
    """`deletedOnly`, as the reference names it (confluent-kafka sends `deleted_only`)."""
    return _flag(request, "deletedOnly") or _flag(request, "deleted_only")


def _subject(subject: str) -> subjects.Subject:
    """The subject a path names, to read: one that cannot exist is not found."""
    try:
        return subjects.parse(subject)
    except subjects.InvalidSubject:
        raise subject_not_found(subject) from None


def _named(subject: str) -> subjects.Subject:
    """The subject a path names, to write: refused (42208) when it is not a valid name."""
    try:
        return subjects.parse(subject)
    except subjects.InvalidSubject as exc:
        raise RegistryError(422, 42208, str(exc)) from None


def _aliased(subject: str) -> str:
    """The subject a `/subjects/{subject}/…` or `/compatibility/subjects/{subject}/…` path
    stands for (contracts.alias_of), else itself, as the reference's AliasFilter rewrites
    those paths. The call then goes on as if the path named that subject, under the
    caller's own rights: an alias reaches nothing its target's name would not, and a
    missing target answers as itself. (Registering resolves it itself, with the topic it
    reads anyway: versions.subject_register.)"""
    try:
        named = subjects.parse(subject)
    except subjects.InvalidSubject:
        return subject
    own = selectors.subject_contract(selectors.topic_by_name(named.topic), named.role)
    return contracts.alias_of(subject, own) or subject


def _admin(request) -> bool:
    """Whether the caller's token carries the operator's grant to manage the registry's
    settings (apps.registry.versions.modes)."""
    token = getattr(request, "api_token", None)
    return token is not None and ADMIN_SCOPE in token.scopes


def _topic(subject: str, *, deleted: bool = False) -> tuple[Topic, str]:
    """The subject's topic and role; 40401 when it has no (live, unless `deleted`) version."""
    named = _subject(subject)
    topic = selectors.topic_by_name(named.topic)
    found = topic is not None and (
        selectors.published_versions(topic, named.role, deleted=deleted).exists()
    )
    if not found:
        raise subject_not_found(subject)
    return topic, named.role


def _version(
    topic: Topic, version: str, role: str = "value", *, deleted: bool = False
) -> SchemaVersion:
    number = submitted.version_number(version)
    published = selectors.published_versions(topic, role, deleted=deleted)
    found = published.last() if number is None else published.filter(version=number).first()
    if found is None:
        raise RegistryError(404, 40402, f"Version {version} not found.")
    return found


def _by_id(schema_id: int) -> SchemaVersion:
    found = selectors.published_version_by_id(schema_id) if schema_id < 2**63 else None
    if found is None:
        raise RegistryError(404, 40403, "Schema not found")
    return found


def _parsed(request):
    """The body's schema, parsed and bundled with the schemas its references name, and
    those references."""
    body = _body(request)
    return submitted.parse_submitted(
        body.get("schemaType"),
        body.get("schema", ""),
        body.get("references"),
        normalize=_flag(request, "normalize"),
    )


class Root(ConfluentView):
    """The API's root: an empty object, as the reference answers it, which tools and load
    balancers call to see the registry is up."""

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_root",
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request):
        return Response({})

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_root_post",
        request=OpenApiTypes.OBJECT,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def post(self, request):
        """Any object posted, answered empty (the reference's way to test a client's
        requests without touching a subject)."""
        _body(request)
        return Response({})


class ClusterId(ConfluentView):
    """`/v1/metadata/id`: the ids tools name the registry by, in the reference's shape
    (ServerClusterId: its empty `id` left out, the ids under `scope.clusters`)."""

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_metadata_id",
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request):
        clusters = {
            "kafka-cluster": settings.STEWARD_REGISTRY_KAFKA_CLUSTER_ID,
            "schema-registry-cluster": settings.STEWARD_REGISTRY_CLUSTER_ID,
        }
        return Response({"scope": {"path": [], "clusters": clusters}})


class ServerVersion(ConfluentView):
    """`/v1/metadata/version`: Steward's release, where the reference answers its own
    (`commitId` is left out, as the reference leaves out what it does not know)."""

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_metadata_version",
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request):
        return Response({"version": importlib.metadata.version("steward")})


class Subjects(ConfluentView):
    @extend_schema(tags=TAG, responses={200: STRINGS, **ERRORS})
    def get(self, request):
        """Every subject with a published version (`deleted=true`: soft-deleted ones too;
        `deletedOnly=true`: only those), those whose name starts with `subjectPrefix`."""
        found = selectors.subjects_with_published_versions(
            deleted=_flag(request, "deleted"), deleted_only=_deleted_only(request)
        )
        prefix = request.query_params.get("subjectPrefix", "")
        names = (subjects.subject_of(topic, role) for topic, role in found)
        return Response(sorted(name for name in names if name.startswith(prefix)))


class Subject(ConfluentView):
    @extend_schema(tags=TAG, request=wire.SchemaIn, responses={200: wire.Registered, **ERRORS})
    def post(self, request, subject):
        """Look a schema up under the subject (`deleted=true`: its soft-deleted versions
        too); with `metadata` or `ruleSet`, a version with that data contract only."""
        subject = _aliased(subject)
        deleted = _flag(request, "deleted")
        topic, role = _topic(subject, deleted=deleted)
        # with its references: bundled as registering bundles
        parsed, resolved = _parsed(request)
        body = _body(request)
        found = submitted.find_registered(
            topic,
            role,
            parsed,
            resolved,
            deleted=deleted,
            metadata=contracts.valid_metadata(body.get("metadata")),
            rule_set=contracts.valid_rule_set(body.get("ruleSet")),
        )
        if found is None:
            raise RegistryError(404, 40403, "Schema not found")
        answer = wire.registered(found, subject)
        # the reference answers the string of the schema looked up, with the found one's id
        # and version (KafkaSchemaRegistry.lookUpSchemaUnderSubject)
        answer["schema"] = parsed.text
        return Response(answer)

    @extend_schema(tags=TAG, responses={200: INTS, **ERRORS})
    def delete(self, request, subject):
        """Soft-delete the subject's versions, or (`permanent=true`) remove a subject soft
        deleted before: the version numbers. The topic's producers and operators only."""
        subject = _aliased(subject)
        named = _subject(subject)
        topic = selectors.topic_by_name(named.topic)
        if topic is None:
            raise subject_not_found(subject)
        deleted = versions.subject_delete(
            actor=request.actor,
            topic=topic,
            role=named.role,
            subject=subject,
            permanent=_flag(request, "permanent"),
        )
        return Response(deleted)


class SubjectVersions(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_subject_version_numbers",
        responses={200: INTS, **ERRORS},
    )
    def get(self, request, subject):
        """The subject's version numbers (`deleted=true`: soft-deleted ones too;
        `deletedOnly=true`: only those)."""
        subject = _aliased(subject)
        deleted_only = _deleted_only(request)
        deleted = _flag(request, "deleted") or deleted_only
        topic, role = _topic(subject, deleted=deleted)
        found = selectors.published_versions(
            topic, role, deleted=deleted, deleted_only=deleted_only
        )
        return Response(list(found.values_list("version", flat=True)))

    @extend_schema(
        tags=TAG,
        request=wire.SchemaIn,
        responses={
            200: wire.Registered,
            409: wire.error("Breaking: waits for the named consumers (error_code 409)."),
            **ERRORS,
        },
    )
    def post(self, request, subject):
        """Register a schema: its id when it is (or becomes) published; 409 (40901) when
        it is breaking, naming the consumers still to acknowledge when any must (once they
        have, registering it again succeeds). `metadata` and `ruleSet` (data contracts)
        are kept with the version, laid over the config's defaults and under its
        overrides; without them, the subject's latest version's. With `normalize=true` the schema
        answered afterwards is its normalized string, as the reference writes it (sorted
        keys for JSON Schema; Avro's normalized form); a schema's id does not depend on
        it. `references` name other
        subjects' versions the schema uses; the same schema with the same references is the
        same version. On a subject whose config names an `alias`, the aliased subject's,
        answered with its name."""
        body = _body(request)
        named = _named(subject)
        account = request.service_account
        done = versions.subject_register(
            actor=request.actor,
            caller=account.name if account else request.user.username,
            subject=named,
            schema_type=body.get("schemaType"),
            schema=body.get("schema", ""),
            references=body.get("references"),
            normalize=_flag(request, "normalize"),
            schema_id=body.get("id"),
            number=body.get("version"),
            metadata=body.get("metadata"),
            rule_set=body.get("ruleSet"),
        )
        return Response(wire.registered(done.version, done.subject or subject, done.references))


class SubjectVersion(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_subject_version",
        responses={200: wire.Registered, **ERRORS},
    )
    def get(self, request, subject, version):
        subject = _aliased(subject)
        deleted = _flag(request, "deleted")
        topic, role = _topic(subject, deleted=deleted)
        found = _version(topic, version, role, deleted=deleted)
        return Response(wire.registered(found, subject, fmt=request.query_params.get("format")))

    @extend_schema(tags=TAG, responses={200: OpenApiTypes.INT, **ERRORS})
    def delete(self, request, subject, version):
        """Soft-delete a version, or (`permanent=true`) remove one soft-deleted before; a
        version the topic's consumers read is refused (42206)."""
        subject = _aliased(subject)
        topic, role = _topic(subject, deleted=True)
        number = versions.version_delete(
            actor=request.actor,
            topic=topic,
            role=role,
            version=version,
            subject=subject,
            permanent=_flag(request, "permanent"),
        )
        return Response(number)


class LatestWithMetadata(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_latest_with_metadata",
        responses={200: wire.Registered, **ERRORS},
    )
    def get(self, request, subject):
        """The subject's latest version whose metadata has every `key`=`value` pair asked
        (`?key=a&value=1&key=b&value=2`, paired in order), as serializers configured with
        `use.latest.with.metadata` ask for it: 40401 for a subject with no version, 40403
        when none has them."""
        subject = _aliased(subject)
        deleted = _flag(request, "deleted")
        topic, role = _topic(subject, deleted=deleted)
        keys, values = request.query_params.getlist("key"), request.query_params.getlist("value")
        # as the reference pairs them: as many pairs as both lists hold
        wanted = dict(zip(keys, values, strict=False))
        found = selectors.latest_with_metadata(topic, role, wanted, deleted=deleted)
        if found is None:
            raise RegistryError(404, 40403, "Schema not found")
        return Response(wire.registered(found, subject, fmt=request.query_params.get("format")))


class SubjectVersionSchema(ConfluentView):
    @extend_schema(tags=TAG, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, subject, version):
        """The version's schema itself, nothing around it."""
        topic, role = _topic(_aliased(subject))
        return wire.schema_string(_version(topic, version, role))


class ReferencedBy(ConfluentView):
    @extend_schema(tags=TAG, responses={200: INTS, **ERRORS})
    def get(self, request, subject, version):
        """The ids of the schemas that reference this version."""
        topic, role = _topic(_aliased(subject))
        return Response(selectors.referencing_ids(_version(topic, version, role)))


class SchemaList(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_schemas",
        responses={200: wire.Registered(many=True), **ERRORS},
    )
    def get(self, request):
        """Every published schema, with its subject, as the reference lists them:
        `subjectPrefix` filters them, `deleted` adds the soft-deleted, `latestOnly` keeps
        each subject's latest, `offset` and `limit` page the list (-1: no limit)."""
        prefix = request.query_params.get("subjectPrefix", "")
        found = sorted(
            (
                v
                for v in selectors.published_version_list(deleted=_flag(request, "deleted"))
                if wire.subject_name(v).startswith(prefix)
            ),
            key=lambda v: (wire.subject_name(v), v.version),
        )
        if _flag(request, "latestOnly"):
            found = list({wire.subject_name(v): v for v in found}.values())
        offset = max(_int_param(request, "offset", 0), 0)
        limit = _int_param(request, "limit", -1)
        found = found[offset:] if limit < 0 else found[offset : offset + limit]
        references = selectors.references_of(v.pk for v in found)  # one query for all
        answer = [wire.registered(v, wire.subject_name(v), references.get(v.pk, [])) for v in found]
        return Response(answer)


class SchemaById(ConfluentView):
    @extend_schema(tags=TAG, responses={200: wire.SchemaText, **ERRORS})
    def get(self, request, schema_id):
        """The schema of that id; with `fetchMaxId=true`, `maxId` too: the highest id the
        registry has given, for a tool that walks every id."""
        answer = wire.registered(_by_id(schema_id), fmt=request.query_params.get("format"))
        shown = ("schema", "schemaType", "references", "metadata", "ruleSet")
        found = {k: answer[k] for k in shown if k in answer}
        if _flag(request, "fetchMaxId"):
            found["maxId"] = selectors.max_schema_id()
        return Response(found)


class SchemaByIdText(ConfluentView):
    @extend_schema(tags=TAG, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, schema_id):
        """The schema of that id itself."""
        return wire.schema_string(_by_id(schema_id))


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
        return Response(sorted({wire.subject_name(v) for v in _uses(request, schema_id)}))


class SchemaByIdVersions(ConfluentView):
    @extend_schema(tags=TAG, responses={200: wire.SubjectVersionOut(many=True), **ERRORS})
    def get(self, request, schema_id):
        """Every subject-version that registered the schema of that id."""
        found = [
            {"subject": wire.subject_name(v), "version": v.version}
            for v in _uses(request, schema_id)
        ]
        return Response(sorted(found, key=lambda r: (r["subject"], r["version"])))


class SchemaTypes(ConfluentView):
    @extend_schema(tags=TAG, responses={200: STRINGS, **ERRORS})
    def get(self, request):
        return Response(SCHEMA_TYPES)


class Contexts(ConfluentView):
    @extend_schema(tags=TAG, responses={200: STRINGS, **ERRORS})
    def get(self, request):
        """The contexts of the subjects: the default one, and each a subject's `:.ctx:`
        qualifier names."""
        found = selectors.subjects_with_published_versions(deleted=True)
        named = {subjects.context_of(subjects.subject_of(topic, role)) for topic, role in found}
        return Response(sorted(named | {"."}))


def _mode_echo(request) -> dict:
    """A PUT /mode's answer: the request as it was sent (`readonly` stays lowercase), as
    the reference echoes its ModeUpdateRequest."""
    return {"mode": _body(request).get("mode")}


def _mode_in(request) -> str:
    mode = str(_body(request).get("mode", "")).upper()
    if mode not in REGISTRY_MODES:
        raise RegistryError(
            422,
            42204,
            "Invalid mode. Valid values are READWRITE, READONLY, READONLY_OVERRIDE, and IMPORT",
        )
    return mode


def _config_in(request) -> tuple[str | None, dict]:
    """The level (None: not sent) and the data-contract settings a config body sends; a
    body that sends neither is an invalid level, as the reference answers it."""
    body = _body(request)
    given = contracts.valid_config(body)
    sent = body.get("compatibility", body.get("compatibilityLevel"))
    if sent is None and given:
        return None, given
    level = str(sent or "").upper()
    if level not in formats.MODES:
        raise RegistryError(422, 42203, f"Invalid compatibility level '{level[:50]}'.")
    return level, given


def _config_out(level: str | None, settings: dict, key: str = "compatibilityLevel") -> dict:
    answer = {key: level} if level else {}
    return {**answer, **{k: v for k, v in settings.items() if v is not None}}


class Mode(ConfluentView):
    @extend_schema(tags=TAG, operation_id="schema_registry_mode", responses={200: wire.ModeIn})
    def get(self, request):
        """The registry's mode."""
        return Response({"mode": selectors.global_registry_mode()})

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_mode_set",
        request=wire.ModeIn,
        responses={200: wire.ModeIn, **ERRORS},
    )
    def put(self, request):
        """The registry's mode: operators (and `registry:admin` tokens) only. IMPORT only
        on a registry with no live subject yet, unless `force=true` (42205)."""
        mode = _mode_in(request)
        versions.set_registry_default(
            actor=request.actor,
            key="mode",
            value=mode,
            registry_admin=_admin(request),
            force=_flag(request, "force"),
        )
        return Response(_mode_echo(request))

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_mode_reset",
        responses={200: wire.ModeIn, **ERRORS},
    )
    def delete(self, request):
        before = selectors.global_registry_mode()
        versions.set_registry_default(
            actor=request.actor, key="mode", value=None, registry_admin=_admin(request)
        )
        return Response({"mode": before})


class SubjectMode(ConfluentView):
    @extend_schema(tags=TAG, responses={200: wire.ModeIn, **ERRORS})
    def get(self, request, subject):
        """The subject's own mode (40409 when it has none); with `defaultToGlobal=true`,
        the mode it is in (its own, else the registry's)."""
        named = _subject(subject)
        topic = selectors.topic_by_name(named.topic)
        if not _flag(request, "defaultToGlobal") and not selectors.own_registry_mode(
            topic, named.role
        ):
            raise RegistryError(
                404, 40409, f"Subject '{subject[:300]}' does not have subject-level mode configured"
            )
        return Response({"mode": selectors.registry_mode_of(topic, named.role)})

    @extend_schema(tags=TAG, request=wire.ModeIn, responses={200: wire.ModeIn, **ERRORS})
    def put(self, request, subject):
        """The subject's own mode (its topic's other subjects keep theirs): the topic's
        producers, operators and `registry:admin` tokens. IMPORT only on a subject with
        no version yet, unless `force=true`."""
        mode = _mode_in(request)
        versions.subject_mode_set(
            actor=request.actor,
            subject=_named(subject),
            mode=mode,
            force=_flag(request, "force"),
            registry_admin=_admin(request),
        )
        return Response(_mode_echo(request))

    @extend_schema(tags=TAG, responses={200: wire.ModeIn, **ERRORS})
    def delete(self, request, subject):
        """The subject's own mode removed (answered): it follows the registry's again.
        40401 when it had none, as the reference answers."""
        named = _subject(subject)
        topic = selectors.topic_by_name(named.topic)
        before = selectors.own_registry_mode(topic, named.role)
        if not before:
            raise subject_not_found(subject)
        versions.set_registry_mode(
            actor=request.actor,
            topic=topic,
            role=named.role,
            mode="",
            registry_admin=_admin(request),
        )
        return Response({"mode": before})


def _compatibility(request, checked: _Checked, against: list[SchemaVersion], *, mode: str):
    """`{is_compatible}` of the body's schema against `against` (published versions of
    the subject, oldest first; none: compatible, as the reference answers), `messages`
    with `verbose=true`, where an invalid schema is an incompatible one with the reason.
    As the reference checks it: under the config's `compatibilityGroup` only the versions
    of the schema's group (its `metadata` as sent) count, and under its `validateFields`
    its reserved fields are checked too (against the subject's latest version)."""
    verbose = _flag(request, "verbose")
    try:
        parsed, _ = _parsed(request)
    except versions.RegistryRefused as exc:
        if not verbose or exc.registry_code != 42201:
            raise
        return Response({"is_compatible": False, "messages": [exc.detail]})
    metadata = contracts.valid_metadata(_body(request).get("metadata"))
    latest = checked.versions[-1] if checked.versions else None
    fields = contracts.top_level_fields(parsed)
    breaking = contracts.reserved_breaks(checked.config, fields, metadata, latest)
    against = contracts.in_group(against, metadata, checked.config)
    if against:
        verdict = submitted.compatibility_verdict(parsed, against, mode=mode, policy=checked.policy)
        breaking = [*breaking, *verdict.breaking]
    answer = {"is_compatible": not breaking}
    if verbose:
        answer["messages"] = [f"{d.kind} at {d.path}: {d.message}" for d in breaking]
    return Response(answer)


@dataclass(frozen=True)
class _Checked:
    """A subject to test a schema against: its live versions (none when it does not
    exist), its level and policy, and its config in force."""

    versions: list[SchemaVersion]
    level: str
    policy: str
    config: dict


def _checked_subject(subject: str) -> _Checked:
    named = _subject(_aliased(subject))
    topic = selectors.topic_by_name(named.topic)
    if topic is None:
        return _Checked([], selectors.default_mode(), "STRICT", selectors.registry_contract())
    config = contracts.config_in_force(
        selectors.subject_contract(topic, named.role), selectors.registry_contract()
    )
    return _Checked(
        list(selectors.published_versions(topic, named.role)),
        selectors.mode_of(topic, role=named.role),
        topic.compatibility_policy,
        config,
    )


class Compatibility(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_compatibility_subjects_versions_create",
        request=wire.SchemaIn,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def post(self, request, subject, version):
        """The schema against one version (`latest`: the latest, if the subject has any),
        in the subject's level's direction."""
        number = submitted.version_number(version)
        checked = _checked_subject(subject)
        found = checked.versions
        against = found[-1:] if number is None else [v for v in found if v.version == number]
        if number is not None and not against:
            raise RegistryError(404, 40402, f"Version {version} not found.")
        mode = checked.level.removesuffix("_TRANSITIVE")
        return _compatibility(request, checked, against, mode=mode)


class CompatibilityAll(ConfluentView):
    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_compatibility_subject",
        request=wire.SchemaIn,
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def post(self, request, subject):
        """The schema against the subject's versions as registering would check it: the
        latest, or every one under a transitive level. A subject with no version has
        nothing to be incompatible with, as the reference answers."""
        checked = _checked_subject(subject)
        return _compatibility(request, checked, checked.versions, mode=checked.level)


class Config(ConfluentView):
    """The registry's default compatibility level (an operator's, else Steward's
    configuration, STEWARD_REGISTRY_DEFAULT_MODE) and data-contract settings."""

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_default_config",
        responses={200: wire.Level, **ERRORS},
    )
    def get(self, request):
        return Response(_config_out(selectors.default_mode(), selectors.registry_contract()))

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_default_config_set",
        request=wire.LevelIn,
        responses={200: wire.LevelIn, **ERRORS},
    )
    def put(self, request):
        """Operators (and `registry:admin` tokens) only; a lowered level is announced on
        every topic that follows it. Fields left out keep their value."""
        level, given = _config_in(request)
        admin = _admin(request)
        if level is not None:
            versions.set_registry_default(
                actor=request.actor, key="compatibility", value=level, registry_admin=admin
            )
        if given:
            versions.set_contract_config(
                actor=request.actor, topic=None, values=given, registry_admin=admin
            )
        return Response(_config_out(level, given, key="compatibility"))

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_default_config_reset",
        responses={200: wire.Level, **ERRORS},
    )
    def delete(self, request):
        """Back to Steward's configured level, without data-contract settings."""
        settings = selectors.registry_contract()
        before = _config_out(selectors.default_mode(), settings)
        admin = _admin(request)
        versions.set_registry_default(
            actor=request.actor, key="compatibility", value=None, registry_admin=admin
        )
        if settings:
            versions.set_contract_config(
                actor=request.actor, topic=None, values=None, registry_admin=admin
            )
        return Response(before)


class SubjectConfig(ConfluentView):
    @extend_schema(tags=TAG, responses={200: wire.Level, **ERRORS})
    def get(self, request, subject):
        """The subject's own level and data-contract settings (40408 when it has
        neither); with `defaultToGlobal=true`, those in force (the registry's where it
        has none)."""
        named = _subject(subject)
        topic = selectors.topic_by_name(named.topic)
        own = selectors.own_level(topic, named.role)
        settings = selectors.subject_contract(topic, named.role)
        if _flag(request, "defaultToGlobal"):
            registry = selectors.registry_contract()
            level = own or selectors.default_mode()
            return Response(_config_out(level, contracts.config_in_force(settings, registry)))
        if not own and not settings:
            raise RegistryError(
                404,
                40408,
                f"Subject '{subject[:300]}' does not have subject-level compatibility configured",
            )
        return Response(_config_out(own, settings))

    @extend_schema(tags=TAG, responses={200: wire.Level, **ERRORS})
    def delete(self, request, subject):
        """Back to the registry's level and settings (audited, and announced if that
        lowers the level): the level and settings it had answered; 40401 when it had
        none, as the reference answers."""
        named = _subject(subject)
        topic = selectors.topic_by_name(named.topic)
        own = selectors.own_level(topic, named.role)
        settings = selectors.subject_contract(topic, named.role)
        if not own and not settings:
            raise subject_not_found(subject)
        admin = _admin(request)
        if own:
            versions.set_mode(
                actor=request.actor, topic=topic, mode="", role=named.role, registry_admin=admin
            )
        if settings:
            versions.set_contract_config(
                actor=request.actor,
                topic=topic,
                role=named.role,
                values=None,
                registry_admin=admin,
            )
        return Response(_config_out(own, settings))

    @extend_schema(tags=TAG, request=wire.LevelIn, responses={200: wire.LevelIn, **ERRORS})
    def put(self, request, subject):
        """The subject's own level and data-contract settings (its topic's other subjects
        keep theirs), a subject with no schema yet's too: the topic's producers,
        operators and `registry:admin` tokens. Fields left out keep their value."""
        level, given = _config_in(request)
        admin = _admin(request)
        named = _named(subject)
        topic = versions.subject_topic(actor=request.actor, subject=named, registry_admin=admin)
        if level is not None:
            versions.set_mode(
                actor=request.actor, topic=topic, mode=level, role=named.role, registry_admin=admin
            )
        if given:
            versions.set_contract_config(
                actor=request.actor,
                topic=topic,
                role=named.role,
                values=given,
                registry_admin=admin,
            )
        return Response(_config_out(level, given, key="compatibility"))


class UnknownPath(ConfluentView):
    """Any other path under the API: the registry's 404, never an HTML page."""

    schema = None  # not an operation of the API

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        raise RegistryError(404, 404, "HTTP 404 Not Found")
