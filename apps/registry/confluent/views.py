"""The Schema Registry API's views of subjects, versions, schemas and compatibility: each
reads its request, makes one call to the registry's services or selectors, and answers in
the wire format (`wire`); every error in the registry's shape (`errors`). Levels, modes
and the data-contract settings are `levels`'."""

from __future__ import annotations

import importlib.metadata
import uuid
from dataclasses import dataclass

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.response import Response

from apps.registry import selectors, subjects, versions
from apps.registry.confluent import wire
from apps.registry.confluent.base import (
    ConfluentView,
    alias_target,
    by_id,
    flag,
    named_subject,
    page,
    parsed_subject,
    read_body,
    submitted_schema,
    topic_of,
    version_of,
    wants_deleted_only,
)
from apps.registry.confluent.errors import (
    RegistryError,
    subject_not_found,
)
from apps.registry.models import SchemaVersion
from apps.registry.versions import contracts, submitted
from apps.registry.versions.submitted import SCHEMA_TYPES

ERRORS, TAG, STRINGS, INTS = wire.ERRORS, wire.TAG, wire.STRINGS, wire.INTS


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
        read_body(request)
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


class ServerDeployment(ConfluentView):
    """`/v1/metadata/deployment`: the attributes the reference's operator configures to
    describe the deployment (`schema.registry.metadata.deployment.attributes`), none by
    default; Steward configures none."""

    @extend_schema(
        tags=TAG,
        operation_id="schema_registry_metadata_deployment",
        responses={200: OpenApiTypes.OBJECT, **ERRORS},
    )
    def get(self, request):
        return Response({"attributes": []})


class Subjects(ConfluentView):
    @extend_schema(tags=TAG, responses={200: STRINGS, **ERRORS})
    def get(self, request):
        """Every subject with a published version (`deleted=true`: soft-deleted ones too;
        `deletedOnly=true`: only those), those whose name starts with `subjectPrefix`, in
        name order; `offset` and `limit` page the list (-1: no limit)."""
        found = selectors.subjects_with_published_versions(
            deleted=flag(request, "deleted"), deleted_only=wants_deleted_only(request)
        )
        prefix = request.query_params.get("subjectPrefix", "")
        names = (subjects.subject_of(topic, role) for topic, role in found)
        return Response(page(request, sorted(n for n in names if n.startswith(prefix))))


class Subject(ConfluentView):
    @extend_schema(tags=TAG, request=wire.SchemaIn, responses={200: wire.Registered, **ERRORS})
    def post(self, request, subject):
        """Look a schema up under the subject (`deleted=true`: its soft-deleted versions
        too); with `metadata` or `ruleSet`, a version with that data contract only."""
        subject = alias_target(subject)
        deleted = flag(request, "deleted")
        topic, role = topic_of(subject, deleted=deleted)
        # with its references: bundled as registering bundles
        parsed, resolved = submitted_schema(request)
        body = read_body(request)
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
        subject = alias_target(subject)
        named = parsed_subject(subject)
        topic = selectors.topic_by_name(named.topic)
        if topic is None:
            raise subject_not_found(subject)
        deleted = versions.subject_delete(
            actor=request.actor,
            topic=topic,
            role=named.role,
            subject=subject,
            permanent=flag(request, "permanent"),
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
        `deletedOnly=true`: only those); `offset` and `limit` page them (-1: no limit)."""
        subject = alias_target(subject)
        deleted_only = wants_deleted_only(request)
        deleted = flag(request, "deleted") or deleted_only
        topic, role = topic_of(subject, deleted=deleted)
        found = selectors.published_versions(
            topic, role, deleted=deleted, deleted_only=deleted_only
        )
        return Response(page(request, list(found.values_list("version", flat=True))))

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
        body = read_body(request)
        named = named_subject(subject)
        account = request.service_account
        done = versions.subject_register(
            actor=request.actor,
            caller=account.name if account else request.user.username,
            subject=named,
            schema_type=body.get("schemaType"),
            schema=body.get("schema", ""),
            references=body.get("references"),
            normalize=flag(request, "normalize"),
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
        subject = alias_target(subject)
        deleted = flag(request, "deleted")
        topic, role = topic_of(subject, deleted=deleted)
        found = version_of(topic, version, role, deleted=deleted)
        return Response(wire.registered(found, subject, fmt=request.query_params.get("format")))

    @extend_schema(tags=TAG, responses={200: OpenApiTypes.INT, **ERRORS})
    def delete(self, request, subject, version):
        """Soft-delete a version, or (`permanent=true`) remove one soft-deleted before; a
        version the topic's consumers read is refused (42206)."""
        subject = alias_target(subject)
        topic, role = topic_of(subject, deleted=True)
        number = versions.version_delete(
            actor=request.actor,
            topic=topic,
            role=role,
            version=version,
            subject=subject,
            permanent=flag(request, "permanent"),
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
        subject = alias_target(subject)
        deleted = flag(request, "deleted")
        topic, role = topic_of(subject, deleted=deleted)
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
        topic, role = topic_of(alias_target(subject))
        return wire.schema_string(version_of(topic, version, role))


class ReferencedBy(ConfluentView):
    @extend_schema(tags=TAG, responses={200: INTS, **ERRORS})
    def get(self, request, subject, version):
        """The ids of the schemas that reference this version; `offset` and `limit` page
        them (-1: no limit)."""
        topic, role = topic_of(alias_target(subject))
        return Response(page(request, selectors.referencing_ids(version_of(topic, version, role))))


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
                for v in selectors.published_version_list(deleted=flag(request, "deleted"))
                if wire.subject_name(v).startswith(prefix)
            ),
            key=lambda v: (wire.subject_name(v), v.version),
        )
        if flag(request, "latestOnly"):
            found = list({wire.subject_name(v): v for v in found}.values())
        found = page(request, found)
        references = selectors.references_of(v.pk for v in found)  # one query for all
        answer = [wire.registered(v, wire.subject_name(v), references.get(v.pk, [])) for v in found]
        return Response(answer)


def _schema_by_id(request, schema_id: int, *, under: str | None = None) -> dict:
    """The schema of that id as the reference answers it by id or GUID (SchemaString): no
    id, version or subject; `format` as asked. `under` (a subject asked for): its subject
    and version too, of that subject's version with the id if it has one, else of another
    subject's, as the reference's getSchemaKeyUsingContexts falls back."""
    fmt = request.query_params.get("format")
    shown = ("schema", "schemaType", "references", "metadata", "ruleSet", "guid")
    found = by_id(schema_id)
    if under is None:
        answer = wire.registered(found, fmt=fmt)
        return {k: answer[k] for k in shown if k in answer}
    uses = selectors.versions_of_schema_id(schema_id, deleted=True)
    found = next((v for v in uses if wire.subject_name(v) == under), found)
    answer = wire.registered(found, wire.subject_name(found), fmt=fmt)
    return {k: answer[k] for k in ("subject", "version", *shown) if k in answer}


def _guid_ids(guid: str) -> dict[str, int]:
    """The ids a GUID names, by context (selectors.schema_ids_of_guid); 40403 for a GUID
    no published version's id has, or one that is no UUID."""
    try:
        found = selectors.schema_ids_of_guid(uuid.UUID(guid))
    except ValueError:
        found = {}
    if not found:
        raise RegistryError(404, 40403, "Schema not found")
    return found


class SchemaById(ConfluentView):
    @extend_schema(tags=TAG, responses={200: wire.SchemaText, **ERRORS})
    def get(self, request, schema_id):
        """The schema of that id; with `fetchMaxId=true`, `maxId` too: the highest id the
        registry has given, for a tool that walks every id. With `subject`, its `subject`
        and `version` too: the subject's version with that id (or, when it has none,
        another subject's)."""
        found = _schema_by_id(request, schema_id, under=request.query_params.get("subject"))
        if flag(request, "fetchMaxId"):
            found["maxId"] = selectors.max_schema_id()
        return Response(found)


class SchemaByGuid(ConfluentView):
    @extend_schema(tags=TAG, responses={200: wire.SchemaText, **ERRORS})
    def get(self, request, guid):
        """The schema whose content has that GUID, as by its id (`format` alike), as a
        deserializer asks for the one a message header names: the default context's id
        when it has one, else the first context's."""
        ids = _guid_ids(guid)
        return Response(_schema_by_id(request, ids.get(".", next(iter(ids.values())))))


class SchemaByGuidIds(ConfluentView):
    @extend_schema(tags=TAG, responses={200: wire.ContextId(many=True), **ERRORS})
    def get(self, request, guid):
        """The ids of the schema with that GUID: in each context (by name) where a
        subject's version has it, the highest."""
        found = _guid_ids(guid)
        return Response([{"context": name, "id": schema_id} for name, schema_id in found.items()])


class SchemaByIdText(ConfluentView):
    @extend_schema(tags=TAG, responses={200: OpenApiTypes.OBJECT, **ERRORS})
    def get(self, request, schema_id):
        """The schema of that id itself."""
        return wire.schema_string(by_id(schema_id))


def _uses(request, schema_id: int) -> list[SchemaVersion]:
    """Every subject-version whose schema has the id (`deleted=true`: soft-deleted ones
    too); 40403 when none."""
    found = selectors.versions_of_schema_id(schema_id, deleted=flag(request, "deleted"))
    if not found:
        raise RegistryError(404, 40403, "Schema not found")
    return found


class SchemaByIdSubjects(ConfluentView):
    @extend_schema(tags=TAG, responses={200: STRINGS, **ERRORS})
    def get(self, request, schema_id):
        """The subjects that registered the schema of that id, in name order; `offset` and
        `limit` page them (-1: no limit)."""
        found = sorted({wire.subject_name(v) for v in _uses(request, schema_id)})
        return Response(page(request, found))


class SchemaByIdVersions(ConfluentView):
    @extend_schema(tags=TAG, responses={200: wire.SubjectVersionOut(many=True), **ERRORS})
    def get(self, request, schema_id):
        """Every subject-version that registered the schema of that id, by subject and
        version; `offset` and `limit` page them (-1: no limit)."""
        found = [
            {"subject": wire.subject_name(v), "version": v.version}
            for v in _uses(request, schema_id)
        ]
        return Response(page(request, sorted(found, key=lambda r: (r["subject"], r["version"]))))


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


def _compatibility(request, checked: _Checked, against: list[SchemaVersion], *, mode: str):
    """`{is_compatible}` of the body's schema against `against` (published versions of
    the subject, oldest first; none: compatible, as the reference answers), `messages`
    with `verbose=true`, where an invalid schema is an incompatible one with the reason.
    As the reference checks it: under the config's `compatibilityGroup` only the versions
    of the schema's group (its `metadata` as sent) count, and under its `validateFields`
    its reserved fields are checked too (against the subject's latest version)."""
    verbose = flag(request, "verbose")
    try:
        parsed, _ = submitted_schema(request)
    except versions.RegistryRefused as exc:
        if not verbose or exc.registry_code != 42201:
            raise
        return Response({"is_compatible": False, "messages": [exc.detail]})
    metadata = contracts.valid_metadata(read_body(request).get("metadata"))
    latest = checked.versions[-1] if checked.versions else None
    fields = contracts.top_level_fields(parsed)
    breaking = contracts.reserved_breaks(checked.config, fields, metadata, latest)
    against = contracts.in_group(against, metadata, checked.config)
    if against:
        verdict = submitted.compatibility_verdict(parsed, against, mode=mode, policy=checked.policy)
        breaking = [*breaking, *verdict.breaking]
    answer = {"is_compatible": not breaking}
    if verbose:
        # as the reference's: the version failed and its schema, the level, after them
        answer["messages"] = submitted.judged_messages(
            parsed,
            against,
            breaking,
            mode=mode,
            level=checked.level,
            policy=checked.policy,
            validate_fields=bool(checked.config.get("validateFields")),
        )
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
    named = parsed_subject(alias_target(subject))
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


class UnknownPath(ConfluentView):
    """Any other path under the API: the registry's 404, never an HTML page."""

    schema = None  # not an operation of the API

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        raise RegistryError(404, 404, "HTTP 404 Not Found")
