"""Which handler each of Steward's own consumers runs: `@consumer(...)` fills HANDLERS.

No models here, so the transports (which make these consumers' groups before a
stream's first entry) stay importable before Django is set up, as a sender signing
webhooks with `webhook_signature` needs. The handlers themselves are in `handlers`,
the inbox that runs them once per event in `inbox`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Handler:
    consumer: str
    topics: tuple[str, ...] | None  # None: every topic in the catalog
    func: Callable  # (Envelope) -> None, or (list[Envelope]) -> None when `batch`
    batch: bool = False


HANDLERS: dict[str, Handler] = {}


def consumer(name: str, *, topics: Iterable[str] | None = None, batch: bool = False):
    """Register a Steward consumer: `name` is its consumer group and inbox key.

    With `batch=True` the function receives the new envelopes of one tenant at once
    (in stream order), which lets it write them in one statement.
    """

    def register(func: Callable):
        HANDLERS[name] = Handler(name, tuple(topics) if topics is not None else None, func, batch)
        return func

    return register
