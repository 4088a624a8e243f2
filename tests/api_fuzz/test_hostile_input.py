"""Hostile input on every operation of the OpenAPI schema: deep nesting, NUL bytes,
crafted cursors and oversized bodies are each sent to every documented operation, and
each must be refused as a 4xx problem (the Schema Registry API: its own error shape),
never a 5xx (Issue #19, part 3, findings 4 and 6).

Plain requests through Django's test client, one per operation and kind, so the whole
module runs in seconds; the generated requests are tests/api_fuzz/test_schema_fuzz.py's.
"""

from __future__ import annotations

import json
import re

import pytest
from django.test import Client
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer

from apps.tenancy.models import TOKEN_SCOPES
from tests.factories import service_token

pytestmark = pytest.mark.django_db

PROBLEM = "application/problem+json"
SCHEMA_REGISTRY = "/api/schema-registry/"
METHODS = ("get", "post", "put", "patch", "delete")
DEEP = "[" * 5000 + "]" * 5000
CRAFTED_CURSORS = ["cD14", "cD0lMDA=", "cj0xJnA9eA==", "!!!"]


def _operations() -> list[tuple[str, str, bool]]:
    generated = SchemaGenerator().get_schema(request=None, public=True)
    paths = json.loads(OpenApiJsonRenderer().render(generated))["paths"]
    return [
        (method, template, "requestBody" in operation)
        for template, item in paths.items()
        for method, operation in item.items()
        if method in METHODS
    ]


OPERATIONS = _operations()
IDS = [f"{method.upper()} {template}" for method, template, _ in OPERATIONS]


def url_for(template: str, value: str = "0") -> str:
    return re.sub(r"{\w+}", value, template)


@pytest.fixture
def caller(db):
    token = service_token(name="hostile", scopes=TOKEN_SCOPES)
    return Client(headers={"Authorization": f"Bearer {token.secret}"})


def assert_refused(answer, template, *, status=None):
    assert answer.status_code < 500, (template, answer.status_code, answer.content[:300])
    assert 400 <= answer.status_code < 500, (template, answer.status_code)
    if status is not None:
        assert answer.status_code == status, (template, answer.content[:300])
    if template.startswith(SCHEMA_REGISTRY):
        # Its own error shape, or a problem for what is refused before its view.
        body = answer.json()
        assert "error_code" in body or answer["Content-Type"] == PROBLEM, template
    else:
        assert answer["Content-Type"] == PROBLEM, (template, answer["Content-Type"])
        assert answer.json()["code"], template


def test_every_operation_is_covered():
    assert len(OPERATIONS) > 50  # the schema is read, not an empty list


@pytest.mark.parametrize("method, template, has_body", OPERATIONS, ids=IDS)
def test_deep_nesting_is_refused(caller, method, template, has_body):
    answer = caller.generic(method.upper(), url_for(template), DEEP, "application/json")
    if answer.status_code < 400 and method in ("get", "delete") and not has_body:
        return  # a body the operation does not read is not input (a GET's, say)
    assert_refused(answer, template)


@pytest.mark.parametrize("method, template, has_body", OPERATIONS, ids=IDS)
def test_nul_bytes_in_the_path_and_the_query_are_refused(caller, method, template, has_body):
    send = getattr(caller, method)
    if "{" in template:
        assert_refused(send(url_for(template, "%00")), template, status=400)
    assert_refused(send(url_for(template) + "?q=%00&search=%00"), template, status=400)


@pytest.mark.parametrize("method, template, has_body", OPERATIONS, ids=IDS)
def test_crafted_cursors_never_fail(caller, method, template, has_body):
    send = getattr(caller, method)
    for cursor in CRAFTED_CURSORS:
        answer = send(url_for(template) + f"?cursor={cursor}")
        assert answer.status_code < 500, (template, cursor, answer.content[:300])
        if answer.status_code >= 400:
            assert_refused(answer, template)
        if answer.status_code == 400 and method == "get" and "{" not in template:
            # A list refuses the cursor itself (a list without pages ignores it).
            assert answer.json().get("code", "invalid_cursor") == "invalid_cursor", template


@pytest.mark.parametrize("method, template, has_body", OPERATIONS, ids=IDS)
def test_an_oversized_body_is_413(caller, settings, method, template, has_body):
    """413; the Schema Registry API's 422, 42209 (the reference's schema too large)."""
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 64 * 1024  # the same check, a smaller body
    body = json.dumps({"name": "x" * (65 * 1024)})
    answer = caller.generic(method.upper(), url_for(template), body, "application/json")
    if template.startswith(SCHEMA_REGISTRY):
        assert_refused(answer, template, status=422)
        assert answer.json()["error_code"] == 42209, template
    else:
        assert_refused(answer, template, status=413)
        assert answer.json()["code"] == "body_too_large", template
