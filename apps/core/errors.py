"""Domain errors with stable codes, mapped to HTTP once (apps.core.api.exceptions)."""

from __future__ import annotations

from apps.core.codes import CoreCode


class DomainError(Exception):
    """A refused operation. `code` is stable and documented; `status` is the HTTP answer."""

    code = CoreCode.DOMAIN_ERROR
    status = 400
    title = "The request was refused"

    def __init__(self, detail: str, *, code: str | None = None, **extra):
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.extra = extra


class NotFound(DomainError):
    code = CoreCode.NOT_FOUND
    status = 404
    title = "Not found"


class Conflict(DomainError):
    code = CoreCode.CONFLICT
    status = 409
    title = "Conflict"


class InvalidTransition(Conflict):
    """An illegal state-machine transition."""

    code = CoreCode.INVALID_TRANSITION


class PreconditionFailed(DomainError):
    code = CoreCode.PRECONDITION_FAILED
    status = 412
    title = "Precondition failed"


class ValidationFailed(DomainError):
    code = CoreCode.INVALID
    status = 400
    title = "Invalid input"
