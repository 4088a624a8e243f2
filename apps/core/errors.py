"""Domain errors with stable codes, mapped to HTTP once (apps.core.api.exceptions)."""

from __future__ import annotations


class DomainError(Exception):
    """A refused operation. `code` is stable and documented; `status` is the HTTP answer."""

    code = "domain_error"
    status = 400
    title = "The request was refused"

    def __init__(self, detail: str, *, code: str | None = None, **extra):
        super().__init__(detail)
        self.detail = detail
        if code:
            self.code = code
        self.extra = extra


class NotFound(DomainError):
    code = "not_found"
    status = 404
    title = "Not found"


class Conflict(DomainError):
    code = "conflict"
    status = 409
    title = "Conflict"


class InvalidTransition(Conflict):
    """An illegal state-machine transition."""

    code = "invalid_transition"


class PreconditionFailed(DomainError):
    code = "precondition_failed"
    status = 412
    title = "Precondition failed"


class ValidationFailed(DomainError):
    code = "invalid"
    status = 400
    title = "Invalid input"
