"""`Idempotency-Key` for POST: the same key and body get the stored answer, the same key
with another body gets 409, and concurrent duplicates wait for the first to finish."""

from __future__ import annotations

import functools
import hashlib
import json

from django.db import connection
from rest_framework.response import Response

from apps.core.codes import CoreCode
from apps.core.errors import Conflict, ValidationFailed
from apps.core.models import IdempotencyRecord

REPLAYED_HEADERS = ("Location", "ETag")


def _caller(request) -> str:
    """Keys are per caller and per tenant acted for: a person who switches tenants does
    not get the other tenant's stored answer for a key they used there."""
    acting = request.tenant.pk if request.tenant is not None else "system"
    if request.service_account is not None:
        return f"service:{request.service_account.pk}@{acting}"
    return f"user:{request.user.pk}@{acting}"


def _claim(*, caller: str, key: str, method: str, path: str, digest: str) -> bool:
    """Insert the key's row; False when it exists already.

    A concurrent request holding the same key in an open transaction makes this
    INSERT wait on the unique index until that transaction ends, so duplicates are
    answered from the finished first request rather than run in parallel.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {IdempotencyRecord._meta.db_table} "  # noqa: S608 - table name only
            "(caller, key, method, path, request_digest, response_headers, created_at) "
            "VALUES (%s, %s, %s, %s, %s, '{}', now()) "
            "ON CONFLICT (caller, key) DO NOTHING",
            [caller, key, method, path, digest],
        )
        return cursor.rowcount == 1


def idempotent(view_method):
    """Decorate a viewset's POST handler (create or an action) with Idempotency-Key support."""

    @functools.wraps(view_method)
    def wrapper(self, request, *args, **kwargs):
        key = request.headers.get("Idempotency-Key")
        if key is None:
            return view_method(self, request, *args, **kwargs)
        if not 1 <= len(key) <= 255:
            raise ValidationFailed(
                "Idempotency-Key must be 1 to 255 characters.",
                code=CoreCode.INVALID_IDEMPOTENCY_KEY,
            )
        caller = _caller(request)
        # The parsed body, canonicalised: key order and spacing do not make a new request.
        body = json.dumps(request.data, sort_keys=True, separators=(",", ":"), default=str)
        digest = hashlib.sha256(f"{request.method} {request.path}\n{body}".encode()).hexdigest()
        claimed = _claim(
            caller=caller, key=key, method=request.method, path=request.path, digest=digest
        )
        if not claimed:
            record = IdempotencyRecord.objects.get(caller=caller, key=key)
            if record.request_digest != digest:
                raise Conflict(
                    "This Idempotency-Key was used with a different request.",
                    code=CoreCode.IDEMPOTENCY_KEY_REUSED,
                )
            headers = {**record.response_headers, "Idempotent-Replayed": "true"}
            return Response(record.response_body, status=record.status_code, headers=headers)
        response = view_method(self, request, *args, **kwargs)
        stored = IdempotencyRecord.objects.filter(caller=caller, key=key)
        if response.status_code >= 400:
            stored.delete()  # only successes are replayed; a failed request may be retried
        else:
            stored.update(
                status_code=response.status_code,
                response_body=response.data,
                response_headers={h: response[h] for h in REPLAYED_HEADERS if h in response},
            )
        return response

    wrapper.idempotent = True  # the OpenAPI schema documents the header (core.api.schema)
    return wrapper
