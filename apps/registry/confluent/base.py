"""What every view of the Schema Registry API shares: its base view (the registry's media
types and error shape) and the readers of its paths, parameters and bodies."""

from __future__ import annotations

from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.views import APIView

from apps.core.api.permissions import PLATFORM
from apps.core.api.views import StewardAccessMixin
from apps.registry import selectors, subjects
from apps.registry.confluent import wire
from apps.registry.confluent.errors import (
    RegistryError,
    registry_response,
    subject_not_found,
)
from apps.registry.models import SchemaVersion, Topic
from apps.registry.versions import contracts, submitted

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


def read_body(request) -> dict:
    if not isinstance(request.data, dict):
        raise RegistryError(400, 400, "The body must be a JSON object.")
    return request.data


def flag(request, name: str) -> bool:
    return request.query_params.get(name, "").lower() == "true"


def int_param(request, name: str, default: int) -> int:
    raw = request.query_params.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise RegistryError(400, 400, f"{name} is a whole number.") from None


def page(request, items: list) -> list:
    """The page of `items` (already in the order answered) that `offset` and `limit` ask
    for, as the reference pages its lists: from `offset` (0, the first), at most `limit`
    (-1, the default: no limit)."""
    offset = max(int_param(request, "offset", 0), 0)
    limit = int_param(request, "limit", -1)
    return items[offset:] if limit < 0 else items[offset : offset + limit]


def wants_deleted_only(request) -> bool:
    """`deletedOnly`, as the reference names it (confluent-kafka sends `deleted_only`)."""
    return flag(request, "deletedOnly") or flag(request, "deleted_only")


def parsed_subject(subject: str) -> subjects.Subject:
    """The subject a path names, to read: one that cannot exist is not found."""
    try:
        return subjects.parse(subject)
    except subjects.InvalidSubject:
        raise subject_not_found(subject) from None


def named_subject(subject: str) -> subjects.Subject:
    """The subject a path names, to write: refused (42208) when it is not a valid name."""
    try:
        return subjects.parse(subject)
    except subjects.InvalidSubject as exc:
        raise RegistryError(422, 42208, str(exc)) from None


def alias_target(subject: str) -> str:
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


def is_admin(request) -> bool:
    """Whether the caller's token carries the operator's grant to manage the registry's
    settings (apps.registry.versions.modes)."""
    token = getattr(request, "api_token", None)
    return token is not None and ADMIN_SCOPE in token.scopes


def topic_of(subject: str, *, deleted: bool = False) -> tuple[Topic, str]:
    """The subject's topic and role; 40401 when it has no (live, unless `deleted`) version."""
    named = parsed_subject(subject)
    topic = selectors.topic_by_name(named.topic)
    found = topic is not None and (
        selectors.published_versions(topic, named.role, deleted=deleted).exists()
    )
    if not found:
        raise subject_not_found(subject)
    return topic, named.role


def version_of(
    topic: Topic, version: str, role: str = "value", *, deleted: bool = False
) -> SchemaVersion:
    number = submitted.version_number(version)
    published = selectors.published_versions(topic, role, deleted=deleted)
    found = published.last() if number is None else published.filter(version=number).first()
    if found is None:
        raise RegistryError(404, 40402, f"Version {version} not found.")
    return found


def by_id(schema_id: int) -> SchemaVersion:
    found = selectors.published_version_by_id(schema_id) if schema_id < 2**63 else None
    if found is None:
        raise RegistryError(404, 40403, "Schema not found")
    return found


def submitted_schema(request):
    """The body's schema, parsed and bundled with the schemas its references name, and
    those references."""
    body = read_body(request)
    return submitted.parse_submitted(
        body.get("schemaType"),
        body.get("schema", ""),
        body.get("references"),
        normalize=flag(request, "normalize"),
    )
