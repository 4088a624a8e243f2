"""The OpenAPI schema documents the error answers too, not only the successes.

Every error of the API is `application/problem+json` (apps.core.api.exceptions); each
operation lists the statuses its shape can answer with, so clients know them and the
API fuzz tests (tests/api_fuzz) hold the code to them. A view whose errors take
another shape (the Confluent-compatible registry) sets `problem_responses = False` and
documents its own.
"""

from __future__ import annotations

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiParameter
from rest_framework import serializers

from apps.core.api.exceptions import PROBLEM_CONTENT_TYPE
from apps.core.api.views import StewardViewSetMixin

UNSAFE_METHODS = ("POST", "PUT", "PATCH", "DELETE")


class FieldErrorSerializer(serializers.Serializer):
    code = serializers.CharField(required=False)
    message = serializers.CharField(required=False)
    # A nested field's errors: {"field": name, "errors": [...]}.
    field = serializers.CharField(required=False)
    errors = serializers.ListField(child=serializers.DictField(), required=False)


class ProblemSerializer(serializers.Serializer):
    """RFC 9457 problem details, with Steward's stable `code`. Some codes add members
    of their own (`field`, `awaiting`…)."""

    type = serializers.CharField(help_text="`https://steward.dev/problems/<code>`")
    title = serializers.CharField()
    status = serializers.IntegerField()
    code = serializers.CharField(help_text="Stable: clients may branch on it.")
    detail = serializers.CharField()
    errors = serializers.DictField(
        child=FieldErrorSerializer(many=True),
        required=False,
        help_text="With `invalid`: each field's errors.",
    )


IDEMPOTENCY_KEY = OpenApiParameter(
    "Idempotency-Key",
    {"type": "string", "minLength": 1, "maxLength": 255},
    OpenApiParameter.HEADER,
    description="The same key and body again get the stored answer; another body, 409.",
)
IF_MATCH = OpenApiParameter(
    "If-Match",
    str,
    OpenApiParameter.HEADER,
    description="The `ETag` of the object as read: the change is refused (412) if it moved on.",
)


class StewardAutoSchema(AutoSchema):
    def get_override_parameters(self):
        parameters = list(super().get_override_parameters())
        # What the request reaches: a viewset's action, or an APIView's get/post/….
        handler = getattr(self.view, getattr(self.view, "action", None) or "", None) or getattr(
            self.view, self.method.lower(), None
        )
        if self.method == "POST" and getattr(handler, "idempotent", False):
            parameters.append(IDEMPOTENCY_KEY)
        if self.method in ("PUT", "PATCH", "DELETE") and isinstance(self.view, StewardViewSetMixin):
            parameters.append(IF_MATCH)
        return parameters

    def get_operation(self, path, path_regex, path_prefix, method, registry):
        operation = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None or not getattr(self.view, "problem_responses", True):
            return operation
        problem = self.resolve_serializer(ProblemSerializer, "response").ref
        responses = operation["responses"]
        for status, description in self._problem_statuses(operation):
            responses.setdefault(
                str(status),
                {
                    "content": {PROBLEM_CONTENT_TYPE: {"schema": problem}},
                    "description": description,
                },
            )
        return operation

    def _problem_statuses(self, operation) -> list[tuple[int, str]]:
        locations = {parameter["in"] for parameter in operation.get("parameters", [])}
        has_body = "requestBody" in operation
        unsafe = self.method in UNSAFE_METHODS
        statuses = []
        if has_body or "query" in locations or unsafe:
            statuses.append((400, "Invalid input (`invalid` names the fields), or refused."))
        if operation.get("security"):
            statuses.append((401, "No credentials, or an invalid, expired or revoked token."))
            statuses.append((403, "The caller may not do this (kind of caller, token scope)."))
        if "path" in locations:
            statuses.append((404, "No such object in the caller's scope."))
        if unsafe:
            statuses.append((409, "Conflicts with the object's state or a concurrent change."))
        if self.method in ("PUT", "PATCH", "DELETE") and isinstance(self.view, StewardViewSetMixin):
            statuses.append((412, "`If-Match` names a version that is no longer current."))
        if has_body:
            statuses.append((415, "The body is not JSON."))
        if self.view.get_throttles():
            statuses.append((429, "Too many requests; `Retry-After` says when to retry."))
        return statuses
