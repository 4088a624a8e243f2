"""Stable error codes: each app declares its own in one enumeration.

A refusal's `code` is part of the API (the problem body's `code`, clients branch on
it), so every code is a member of one `Codes` enumeration, in the module `codes.py` of
the app that raises it, with a one-line meaning:

    class AssetCode(Codes):
        NOT_DELETABLE = "asset_not_deletable", "Only a draft asset can be deleted."

    raise InvalidTransition("...", code=AssetCode.NOT_DELETABLE)

A member is a `str`, so it compares, serialises and logs as its value. `all_codes()`
reads every app's enumeration; docs/errors.md is written from it (`make errors`) and a
test fails when it is out of date, or when a code is written as a literal outside
these enumerations.
"""

from __future__ import annotations

import enum
from importlib import import_module

from django.apps import apps


class Codes(enum.StrEnum):
    """The base of every app's enumeration of error codes."""

    meaning: str

    def __new__(cls, value: str, meaning: str = ""):
        member = str.__new__(cls, value)
        member._value_ = value
        member.meaning = meaning
        return member


def all_codes() -> dict[str, list[Codes]]:
    """Every app's codes, by the app's label, in declaration order."""
    found: dict[str, list[Codes]] = {}
    for config in apps.get_app_configs():
        if not config.name.startswith("apps."):
            continue
        try:
            module = import_module(f"{config.name}.codes")
        except ModuleNotFoundError as missing:
            if missing.name != f"{config.name}.codes":
                raise
            continue
        for value in vars(module).values():
            declared_here = getattr(value, "__module__", None) == module.__name__
            if declared_here and isinstance(value, type) and issubclass(value, Codes):
                found.setdefault(config.label, []).extend(value)
    return found


def document() -> str:
    """docs/errors.md: every code a client may meet, by app, with its meaning."""
    lines = [
        "# Error codes",
        "",
        "Every refusal Steward's API answers is an `application/problem+json` body whose",
        "`code` is stable: clients branch on it. This page lists every code, by the app",
        "that raises it. It is written from the code (`make errors`), and a test fails",
        "when it is out of date.",
        "",
        "An action on the attention queue refuses an input it needs and did not get with",
        "`<input>_required` (for example `owner_required`), naming the input in `field`.",
        "",
    ]
    for label, codes in sorted(all_codes().items()):
        lines += [f"## {label}", "", "| code | meaning |", "| --- | --- |"]
        lines += [f"| `{code.value}` | {code.meaning} |" for code in codes]
        lines.append("")
    return "\n".join(lines)


class CoreCode(Codes):
    """The codes every part of the API may answer with: the domain errors' defaults, the
    request's shape, authentication and scopes, idempotency, paging, and the server."""

    # The domain errors' defaults (apps.core.errors), when a refusal names no code of
    # its own.
    DOMAIN_ERROR = "domain_error", "The request was refused."
    NOT_FOUND = "not_found", "No such object, or none the caller may see."
    CONFLICT = "conflict", "The change conflicts with the object's current state."
    INVALID_TRANSITION = (
        "invalid_transition",
        "The object's status does not allow this change; `current_status` names it.",
    )
    PRECONDITION_FAILED = "precondition_failed", "A precondition of the request does not hold."
    INVALID = "invalid", "The request has invalid input; `errors` names the fields."
    # Answers for input no view can mean.
    MALFORMED_REQUEST = "malformed_request", "The request body could not be parsed."
    JSON_TOO_DEEP = "json_too_deep", "The JSON body nests deeper than the limit."
    BODY_TOO_LARGE = "body_too_large", "The request body is larger than the limit."
    NUL_CHARACTER = "nul_character", "The URL contains a NUL character."
    URL_TOO_LONG = "url_too_long", "The URL is longer than the limit (STEWARD_MAX_URL_LENGTH)."
    BAD_HOST = "bad_host", "The Host header names a host Steward does not serve."
    BAD_REQUEST = "bad_request", "The request's headers or form are not ones Steward accepts."
    UNKNOWN_FIELD = "unknown_field", "A field the endpoint does not know was sent."
    NULL_CHARACTERS_NOT_ALLOWED = (
        "null_characters_not_allowed",
        "A field's value contains a NUL character, which Steward cannot store.",
    )
    METHOD_NOT_ALLOWED = "method_not_allowed", "The endpoint does not answer this method."
    NOT_ACCEPTABLE = "not_acceptable", "No representation matches the Accept header."
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type", "The body's media type is not accepted."
    # Who is calling, and for which tenant.
    NOT_AUTHENTICATED = "not_authenticated", "The request carries no credentials."
    AUTHENTICATION_FAILED = "authentication_failed", "The credentials are not valid."
    PERMISSION_DENIED = "permission_denied", "The caller may not do this."
    MISSING_SCOPE = "missing_scope", "The token lacks the scope this endpoint needs."
    CROSS_TENANT = "cross_tenant", "The object belongs to another tenant."
    TENANT_MISMATCH = "tenant_mismatch", "The caller acts for another tenant than the one named."
    TENANT_REQUIRED = "tenant_required", "The request must name the tenant it is for."
    REASON_REQUIRED = "reason_required", "The action needs a reason, which is recorded with it."
    INVALID_EXPIRY = "invalid_expiry", "The expiry given is not in the future."
    DOES_NOT_EXIST = "does_not_exist", "A named object (a tenant's slug, say) does not exist."
    # Writes that depend on what the client read or sent before.
    STALE_ETAG = "stale_etag", "The object changed since it was read (If-Match); fetch it again."
    INVALID_IDEMPOTENCY_KEY = (
        "invalid_idempotency_key",
        "The Idempotency-Key header is not 1 to 255 characters.",
    )
    IDEMPOTENCY_KEY_REUSED = (
        "idempotency_key_reused",
        "The Idempotency-Key was used before with a different request.",
    )
    INVALID_CURSOR = "invalid_cursor", "The cursor is not one this list gave out."
    NOT_IN_QUEUE = "not_in_queue", "The item is not waiting in the attention queue."
    # The server's state.
    THROTTLED = "throttled", "Too many requests; retry after the Retry-After header's seconds."
    SERVER_ERROR = "server_error", "Steward could not answer; the error is logged."
    DATABASE_UNAVAILABLE = (
        "database_unavailable",
        "Steward cannot reach its database just now; retry after Retry-After.",
    )
    ERROR = "error", "An error no more specific code describes."
