"""One exception handler: every API error is `application/problem+json` with a stable code.

    {"type": "https://steward.dev/problems/<code>", "title": …, "status": …,
     "code": "<code>", "detail": …, "errors": {field: [{"code": …, "message": …}]}}

The transaction of the failed request is rolled back here, so an error changes nothing.
"""

from __future__ import annotations

from django.core.exceptions import ObjectDoesNotExist, RequestDataTooBig
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError, transaction
from django.http import Http404, JsonResponse
from rest_framework import exceptions
from rest_framework.response import Response

from apps.core.api.parsers import TOO_DEEP
from apps.core.codes import CoreCode
from apps.core.errors import Conflict, DomainError, NotFound
from apps.core.scope import ScopeViolation

PROBLEM_CONTENT_TYPE = "application/problem+json"
PROBLEM_TYPE_BASE = "https://steward.dev/problems/"

_DRF_CODES = {
    exceptions.ParseError: CoreCode.MALFORMED_REQUEST,
    exceptions.NotAuthenticated: CoreCode.NOT_AUTHENTICATED,
    exceptions.AuthenticationFailed: CoreCode.AUTHENTICATION_FAILED,
    exceptions.PermissionDenied: CoreCode.PERMISSION_DENIED,
    exceptions.NotFound: CoreCode.NOT_FOUND,
    exceptions.MethodNotAllowed: CoreCode.METHOD_NOT_ALLOWED,
    exceptions.NotAcceptable: CoreCode.NOT_ACCEPTABLE,
    exceptions.UnsupportedMediaType: CoreCode.UNSUPPORTED_MEDIA_TYPE,
    exceptions.Throttled: CoreCode.THROTTLED,
    exceptions.ValidationError: CoreCode.INVALID,
}


PROBLEM_MEMBERS = ("type", "title", "status", "code", "detail")


def problem_body(*, status_code: int, code: str, title: str, detail: str = "", **extra) -> dict:
    # A domain error's extras may be named like a problem member (an object's `status`
    # when a transition is refused); they must not replace it, so they are renamed.
    extra = {(f"current_{k}" if k in PROBLEM_MEMBERS else k): v for k, v in extra.items()}
    return {
        "type": PROBLEM_TYPE_BASE + code,
        "title": title,
        "status": status_code,
        # Plain text, not the enumeration member: every renderer writes it, the schema
        # view's YAML one too (its throttled answer was a 500).
        "code": str(code),
        "detail": detail or title,
        **extra,
    }


def problem(
    *, status_code: int, code: str, title: str, detail: str = "", headers=None, **extra
) -> Response:
    body = problem_body(status_code=status_code, code=code, title=title, detail=detail, **extra)
    return Response(body, status=status_code, headers=headers, content_type=PROBLEM_CONTENT_TYPE)


def problem_response(*, status_code: int, code: str, title: str, detail: str = "", **extra):
    """`problem` as a plain Django response, for answers given outside DRF's dispatch."""
    body = problem_body(status_code=status_code, code=code, title=title, detail=detail, **extra)
    return JsonResponse(body, status=status_code, content_type=PROBLEM_CONTENT_TYPE)


def _field_errors(detail) -> dict:
    """DRF's nested ErrorDetail structure → {field: [{code, message}]}."""
    if isinstance(detail, dict):
        return {key: _flatten(value) for key, value in detail.items()}
    return {"non_field_errors": _flatten(detail)}


def _flatten(value) -> list:
    if isinstance(value, list):
        return [item for entry in value for item in _flatten(entry)]
    if isinstance(value, dict):
        # Keys are names, or the indexes of a list's items (ints): always strings out.
        return [{"field": str(key), "errors": _flatten(inner)} for key, inner in value.items()]
    return [{"code": getattr(value, "code", CoreCode.INVALID), "message": str(value)}]


class BodyTooLarge(exceptions.APIException):
    status_code = 413
    default_detail = "Request body too large"
    default_code = CoreCode.BODY_TOO_LARGE


def _title(exc, request) -> str:
    # Some of DRF's default details are templates ("{media_type}", "{method}"): filled
    # with what the request sent, so the title says what was refused.
    title = str(getattr(exc, "default_detail", "Error"))
    if "{" in title and request is not None:
        try:
            title = title.format(
                media_type=getattr(request, "content_type", "") or "",
                method=request.method,
            )
        except (KeyError, IndexError, ValueError):
            title = title.split("{")[0].strip().rstrip('"').strip() or "Error"
    return title


def problem_exception_handler(exc, context):
    if isinstance(exc, RecursionError):
        # Input that nests deeper than a walk of it can go (a JSON body a parser of
        # its own read unbounded, say): bad input, as the bounded parser answers it.
        exc = exceptions.ParseError("The request nests too deeply.", code=TOO_DEEP)
    elif isinstance(exc, RequestDataTooBig):
        exc = BodyTooLarge("The request body is larger than the limit.")
    if isinstance(exc, Http404 | ObjectDoesNotExist):
        exc = exceptions.NotFound()
    elif isinstance(exc, DjangoPermissionDenied):
        exc = exceptions.PermissionDenied()
    elif isinstance(exc, DjangoValidationError):
        # full_clean() in a service: the same answer as a serializer's validation error
        detail = exc.message_dict if hasattr(exc, "error_dict") else exc.messages
        exc = exceptions.ValidationError(detail)
    elif isinstance(exc, IntegrityError):
        # A constraint the database guards, hit by a concurrent request after validation.
        exc = Conflict("The change conflicts with the current state.")
    elif isinstance(exc, ScopeViolation):
        exc = NotFound("The object belongs to another tenant.", code=CoreCode.CROSS_TENANT)

    if isinstance(exc, DomainError):
        response = problem(
            status_code=exc.status, code=exc.code, title=exc.title, detail=exc.detail, **exc.extra
        )
    elif isinstance(exc, exceptions.APIException):
        headers = {}
        if getattr(exc, "auth_header", None):
            headers["WWW-Authenticate"] = exc.auth_header
        if getattr(exc, "wait", None):
            headers["Retry-After"] = str(int(exc.wait))
        code = _DRF_CODES.get(type(exc))
        extra = {}
        if isinstance(exc, exceptions.ValidationError):
            extra["errors"] = _field_errors(exc.detail)
            detail = "The request has invalid fields; see errors."
            code = CoreCode.INVALID
        else:
            detail = str(exc.detail)
            specific = exc.get_codes() if isinstance(exc.detail, str) else None
            # Our own raises carry a specific code (token_expired, missing_scope, …).
            if isinstance(specific, str) and specific != exc.default_code:
                code = specific
        code = code or getattr(exc, "default_code", CoreCode.ERROR)
        title = _title(exc, context.get("request"))
        response = problem(
            status_code=exc.status_code,
            code=code,
            title=title,
            detail=detail,
            headers=headers,
            **extra,
        )
    else:
        return None

    # An answered error must not commit the request's transaction. Views outside any
    # request transaction (see TenantScopeMiddleware) have nothing open by now: their
    # own atomic blocks rolled back as the exception left them.
    if getattr(context.get("request"), "steward_transaction", False):
        transaction.set_rollback(True)
    return response
