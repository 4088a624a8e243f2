"""The one way any app writes an event: into the outbox, in the caller's transaction.

The outbox, its dispatcher and its transports are `apps.eventing`'s. The apps beneath
it (tenancy, registry) must emit too, and may not import it, so every producer calls
this port and eventing provides it (`STEWARD_OUTBOX_EMITTER`, as Django names its
backends in settings).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.utils.module_loading import import_string


@dataclass(frozen=True)
class NewEvent:
    topic: str
    event_type: str
    aggregate_type: str
    aggregate_id: str
    payload: dict
    tenant: Any = None  # a Tenant, a tenant id, or None for a platform-wide event
    correlation_id: str = ""
    causation_id: str = ""


@functools.cache
def _emit_many():
    return import_string(settings.STEWARD_OUTBOX_EMITTER)


def emit_many(events: list[NewEvent]) -> list:
    """Write several events in one statement; they keep their order per aggregate.
    Returns their envelopes (`apps.eventing.envelope.Envelope`)."""
    return _emit_many()(events)


def emit(
    *,
    topic: str,
    event_type: str,
    aggregate_type: str,
    aggregate_id: str,
    payload: dict,
    tenant=None,
    correlation_id: str = "",
    causation_id: str = "",
):
    """Write one event; the caller's scope must own its tenant (row-level security)."""
    return emit_many(
        [
            NewEvent(
                topic=topic,
                event_type=event_type,
                aggregate_type=aggregate_type,
                aggregate_id=aggregate_id,
                payload=payload,
                tenant=tenant,
                correlation_id=correlation_id,
                causation_id=causation_id,
            )
        ]
    )[0]
