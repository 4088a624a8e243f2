"""Per-request context that services read without it being passed around."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True)
class Actor:
    """Who is acting: a person, a service account, or Steward itself."""

    user: object | None = None
    service_account: object | None = None

    @property
    def label(self) -> str:
        if self.user is not None:
            return self.user.get_username()
        if self.service_account is not None:
            return f"service:{self.service_account.name}"
        return "steward"


SYSTEM_ACTOR = Actor()
request_id: ContextVar[str] = ContextVar("steward_request_id", default="")
