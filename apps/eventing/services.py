"""Eventing's writes: envelopes into the outbox (`emit_many`, behind `apps.core.outbox`),
in the caller's transaction, and an operator's replay or discard of a dead letter."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import uuid
import zlib
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.core.context import Actor, request_id
from apps.core.enqueue import enqueue_on_commit
from apps.core.errors import Conflict, ValidationFailed
from apps.core.kick import kick
from apps.core.outbox import NewEvent
from apps.core.scope import owner_scope
from apps.eventing.envelope import Envelope
from apps.eventing.models import LANES, DeadLetter, OutboxEvent
from apps.registry.selectors import resolve_topic
from apps.tenancy.audit import audit_record

logger = logging.getLogger(__name__)


class UnknownTopic(ValidationFailed):
    code = "unknown_topic"


class PayloadNotJson(ValidationFailed):
    code = "payload_not_json"


def lane_of(aggregate_type: str, aggregate_id: str) -> int:
    return zlib.crc32(f"{aggregate_type}:{aggregate_id}".encode()) % LANES


def _check_payload(payload: Any) -> None:
    # The JSON encoding itself is checked once for the whole batch, in emit_many.
    if not isinstance(payload, dict):
        raise PayloadNotJson("The payload must be a JSON object.")


def _envelope(event: NewEvent, topics: dict, now) -> Envelope:
    if event.topic not in topics:
        topics[event.topic] = resolve_topic(event.topic)
    topic = topics[event.topic]
    if topic is None:
        raise UnknownTopic(f"There is no topic {event.topic!r} in the catalog.")
    _check_payload(event.payload)
    event_id = uuid.uuid4()
    envelope = Envelope(
        event_id=event_id,
        topic=topic.name,
        event_type=event.event_type,
        schema_version=topic.schema_version,
        tenant_id=getattr(event.tenant, "pk", event.tenant),
        aggregate_type=event.aggregate_type,
        aggregate_id=str(event.aggregate_id),
        occurred_at=now,
        correlation_id=event.correlation_id or request_id.get() or str(event_id),
        causation_id=event.causation_id,
        payload=event.payload,
    )
    return envelope


def aggregate_lock_key(aggregate_type: str, aggregate_id: str) -> int:
    digest = hashlib.blake2b(f"{aggregate_type}:{aggregate_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _lock_aggregates(envelopes: list[Envelope]) -> None:
    """Hold each aggregate's lock until this transaction ends.

    The dispatcher sends a lane's rows in id order, and ids are handed out at INSERT,
    not at COMMIT. Two open transactions writing events of the same aggregate could
    commit in the other order than their ids and have the later event dispatched
    first; taking the aggregate's lock before inserting makes the second wait for the
    first to finish, so id order is commit order for every aggregate. Keys are taken
    in sorted order, so two transactions never deadlock on each other's aggregates.
    """
    keys = sorted({aggregate_lock_key(e.aggregate_type, e.aggregate_id) for e in envelopes})
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_advisory_xact_lock(k) FROM unnest(%s::bigint[]) AS k ORDER BY k", [keys]
        )


OUTBOX_INSERT = f"""
INSERT INTO {OutboxEvent._meta.db_table} (event_id, topic, event_type, schema_version,
    tenant_id, aggregate_type, aggregate_id, lane, occurred_at, correlation_id,
    causation_id, payload)
SELECT event_id, topic, event_type, schema_version, tenant_id, aggregate_type, aggregate_id,
    lane, occurred_at, correlation_id, causation_id, payload
FROM ROWS FROM (jsonb_to_recordset(%s::jsonb) AS (event_id uuid, topic text,
    event_type text, schema_version int, tenant_id uuid, aggregate_type text,
    aggregate_id text, lane smallint, occurred_at timestamptz, correlation_id text,
    causation_id text, payload jsonb)) WITH ORDINALITY AS r(event_id, topic, event_type,
    schema_version, tenant_id, aggregate_type, aggregate_id, lane, occurred_at,
    correlation_id, causation_id, payload, n)
ORDER BY n
"""  # noqa: S608 - table name only


def emit_many(events: list[NewEvent]) -> list[Envelope]:
    """Write several envelopes in one statement; they keep their order per aggregate.

    The rows travel as one JSON document (json's C encoder, no per-value quoting in
    Python) and are inserted in list order, so ids follow it; no model instance is
    built per event: emitting is on every producer's path.
    """
    topics: dict = {}  # each topic resolved once per call
    now = timezone.now()
    envelopes = [_envelope(event, topics, now) for event in events]
    rows = []
    for envelope in envelopes:
        row = envelope.to_dict()
        row["lane"] = lane_of(envelope.aggregate_type, envelope.aggregate_id)
        rows.append(row)
    try:
        # allow_nan=False: NaN and Infinity are not JSON, whatever Python's json accepts.
        document = json.dumps(rows, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise PayloadNotJson(f"The payload is not JSON: {exc}.") from None
    with transaction.atomic():
        _lock_aggregates(envelopes)
        with connection.cursor() as cursor:
            cursor.execute(OUTBOX_INSERT, [document])
        if settings.STEWARD_EVENTING["KICK_ON_COMMIT"]:
            transaction.on_commit(kick_dispatcher)
    return envelopes


KICK_KEY = "steward:dispatch:kick"


def kick_dispatcher() -> None:
    """Ask for a dispatcher run now, unless one is already asked for."""
    kick("eventing.dispatch_outbox", KICK_KEY)


def backoff_seconds(attempt: int, *, base: float, cap: float) -> float:
    """Exponential back-off: base, 2×base, 4×base, … capped."""
    return min(cap, base * math.pow(2, max(0, attempt - 1)))


# --------------------------------------------------------------------------- dead letters


def _resolve_dead_letter(
    *, actor: Actor, dead_letter: DeadLetter, state: str, action: str
) -> DeadLetter:
    tenant_id = dead_letter.tenant_id
    with owner_scope(tenant_id):
        # Conditional, along the table: of two operators pressing the button at once,
        # one wins and the other is told; the envelope is replayed at most once per
        # dead letter.
        changed = DeadLetter.objects.filter(
            pk=dead_letter.pk, state__in=DeadLetter.TRANSITIONS.sources(state)
        ).update(state=state, resolved_at=timezone.now(), resolved_by=actor.label[:150])
        if not changed:
            raise Conflict(
                "This dead letter has already been replayed or discarded.",
                code="dead_letter_resolved",
            )
        dead_letter.refresh_from_db()
        audit_record(
            actor=actor,
            action=action,
            instance=dead_letter,
            tenant=tenant_id,
            changes={"state": [DeadLetter.State.DEAD, state]},
        )
    return dead_letter


def dead_letter_replay(*, actor: Actor, dead_letter: DeadLetter) -> DeadLetter:
    """Queue a dead letter's envelope for one more delivery to its subscription.

    The state change is the queue: a task is started after commit, and the periodic
    redelivery sweep picks up any replay whose task was lost (Redis away, a worker
    killed), so a replay an operator asked for is never forgotten.
    """
    dead_letter = _resolve_dead_letter(
        actor=actor,
        dead_letter=dead_letter,
        state=DeadLetter.State.REPLAYING,
        action="dead_letter.replay",
    )
    enqueue_on_commit("eventing.replay_dead_letter", dead_letter_id=dead_letter.pk)
    return dead_letter


def dead_letter_discard(*, actor: Actor, dead_letter: DeadLetter) -> DeadLetter:
    return _resolve_dead_letter(
        actor=actor,
        dead_letter=dead_letter,
        state=DeadLetter.State.DISCARDED,
        action="dead_letter.discard",
    )
