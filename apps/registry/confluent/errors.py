"""The Schema Registry API's errors, in the reference registry's shape,
`{"error_code": …, "message": …}`, on every path, unknown ones included.

The numeric error codes are the reference registry's (40401 subject not found, 40402
version not found, 40403 schema not found, 40408/40409 no subject-level level/mode,
42201 invalid schema, 42202 invalid version, 42203 invalid compatibility level, 42204
invalid mode, 42205 operation not permitted, 42206 referenced, 42208 invalid subject,
40301 forbidden, 40901 incompatible): clients branch on them. Steward's refusals carry
theirs (`registry_code`); this module maps everything else once.
"""

from __future__ import annotations

from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response

from apps.core.errors import Conflict, DomainError
from apps.registry.services import NotPermitted


class RegistryError(Exception):
    def __init__(self, status: int, code: int, message: str):
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject[:300]}' not found.")


def _from_domain(exc: DomainError) -> RegistryError | None:
    """A refusal of the registry's services, with the reference registry's code."""
    registry_code = getattr(exc, "registry_code", None)
    if registry_code is not None:
        return RegistryError(exc.status, registry_code, exc.detail)
    if isinstance(exc, NotPermitted):
        return RegistryError(403, 40301, exc.detail)
    if isinstance(exc, Conflict):
        return RegistryError(409, 409, exc.detail)
    return None


def registry_response(exc: Exception) -> Response | None:
    """The error's answer in the registry's shape; None for what is not an API error
    (the view's own handling answers it)."""
    if isinstance(exc, DomainError):
        exc = _from_domain(exc) or exc
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
        # The rest (throttling, media types…) in the registry's shape too: clients of
        # this API read no other.
        headers = {"Retry-After": str(int(exc.wait))} if getattr(exc, "wait", None) else {}
        message = str(exc.detail) if isinstance(exc.detail, str) else "Invalid request."
        return Response(
            {"error_code": exc.status_code, "message": message},
            status=exc.status_code,
            headers=headers,
        )
    return None
