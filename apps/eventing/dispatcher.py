"""The outbox dispatcher: outbox rows → Redis streams, at least once, in order per aggregate.

A service module of eventing's (see apps.eventing.services): the dispatcher's runs,
`dispatch_kicked` (a commit asked for one), `dispatch_sweep` (beat's safety net) and
`drain`, are what tasks and commands call.

One pass:
1. lease a lane that has due rows (a short transaction: `FOR UPDATE SKIP LOCKED` on
   the lane rows, so concurrent dispatchers each get a different lane);
2. read that lane's oldest rows, a bounded batch, in write order (no locks held);
3. publish them (the network call, outside any transaction);
4. move what was published to the dispatched log (one statement deletes the outbox
   rows and logs them, each under its owning tenant's scope), count it and release the
   lane, noting the highest id published (one short transaction).

Publishing is one Redis script per batch that first checks Redis still holds what the
lane published before; when it does not (Redis lost its data), the lane's logged
events are re-driven first, in order (apps.eventing.redrive).

A dispatcher that dies between 3 and 4 leaves its rows in place; when its lease runs
out another dispatcher publishes them again, in the same order. Consumers deduplicate
on `event_id`, so that is at-least-once delivery without loss or reordering. A
transport failure backs the lane off exponentially and keeps the rows.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from apps.core.kick import clear_kick
from apps.core.scope import owner_scope, system_scope
from apps.eventing.envelope import Envelope
from apps.eventing.models import LANES, DispatchedEvent, DispatchLane, OutboxEvent
from apps.eventing.redrive import ENVELOPE_COLUMNS, redrive_leased, redrive_lost_lanes
from apps.eventing.services import KICK_KEY, backoff_seconds, count_deliveries
from apps.eventing.signals import send_follow_task
from apps.eventing.transports import (
    LaneBehind,
    RedisStreamTransport,
    TransportError,
    outbox_transport,
)

logger = logging.getLogger(__name__)

OUTBOX = OutboxEvent._meta.db_table
LANE = DispatchLane._meta.db_table
LOG = DispatchedEvent._meta.db_table


def ensure_lanes() -> None:
    """Create the lane rows that do not exist yet (cheap; run at the start of each drain)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {LANE} (lane, leased_until, failures, next_attempt_at, last_error)"  # noqa: S608
            " SELECT g, now(), 0, now(), '' FROM generate_series(0, %s) AS g"
            " ON CONFLICT (lane) DO NOTHING",
            [LANES - 1],
        )


def _claim_lane(token: uuid.UUID, lease: timedelta) -> tuple[int, int] | None:
    """(lane, its published_through) of a due lane now leased under `token`."""
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(
            f"""
            UPDATE {LANE} SET leased_until = now() + %s, lease_token = %s,
                              last_claimed_at = now()
            WHERE lane = (
                SELECT l.lane FROM {LANE} l
                WHERE l.leased_until <= now() AND l.next_attempt_at <= now()
                  AND EXISTS (SELECT 1 FROM {OUTBOX} o WHERE o.lane = l.lane)
                ORDER BY l.last_claimed_at NULLS FIRST
                LIMIT 1
                FOR UPDATE SKIP LOCKED
            )
            RETURNING lane, published_through
            """,  # noqa: S608 - table names only
            [lease, token],
        )
        row = cursor.fetchone()
    return (row[0], row[1]) if row else None


def _read_lane(lane: int, batch: int) -> list[tuple[int, Envelope]]:
    """The lane's oldest rows as (id, envelope), in write order. Plain tuples, not model
    instances: building 500 models per batch would cost more than publishing them."""
    with system_scope():
        rows = (
            OutboxEvent.objects.filter(lane=lane)
            .order_by("id")
            .values_list("id", *ENVELOPE_COLUMNS)[:batch]
        )
        return [(row[0], Envelope(*row[1:])) for row in rows]


def _release(lane: int, token: uuid.UUID, **fields) -> None:
    DispatchLane.objects.filter(lane=lane, lease_token=token).update(
        leased_until=timezone.now(), lease_token=None, **fields
    )


# Deleted from the outbox and logged in one statement: the row is written once more,
# never read back into Python.
LOGGED = ", ".join(("id", "lane", *ENVELOPE_COLUMNS))
MOVE = (
    f"WITH moved AS (DELETE FROM {OUTBOX} WHERE id = ANY(%s) RETURNING {LOGGED})"  # noqa: S608
    f" INSERT INTO {LOG} ({LOGGED}, dispatched_at) SELECT {LOGGED}, now() FROM moved"
)


def _move_published(rows: list[tuple[int, Envelope]]) -> None:
    by_tenant: dict = defaultdict(list)
    for row_id, envelope in rows:
        by_tenant[envelope.tenant_id].append(row_id)
    for tenant_id, ids in by_tenant.items():
        # Every mutation runs in the owning tenant's scope; platform-wide events
        # (no tenant) are written and removed in the system scope.
        with owner_scope(tenant_id):
            with connection.cursor() as cursor:
                cursor.execute(MOVE, [ids])


def _publish(transport, rows, lane: int, published: int, token: uuid.UUID) -> None:
    """Publish the lane's batch; when Redis lost what the lane published before, re-drive
    that first (the lane is ours: nothing else publishes on it meanwhile)."""
    envelopes = [envelope for _, envelope in rows]
    through = rows[-1][0]
    if not isinstance(transport, RedisStreamTransport):
        # Another transport keeps no marks: RabbitMQ confirms each message once its
        # queues hold it, and returns only then. The lane routes it (apps.eventing.amqp).
        transport.publish(envelopes, lane=lane)
        return
    try:
        transport.publish(envelopes, lane=lane, expected=published, through=through)
    except LaneBehind as behind:
        redrive_leased({lane: (behind.have, published)}, transport, token)
        transport.publish(envelopes, lane=lane, expected=published, through=through)


def dispatch_lane_once(transport=None) -> int | None:
    """Lease one due lane and move one batch of it: the number of envelopes published,
    or None when no lane has due rows."""
    config = settings.STEWARD_EVENTING
    token = uuid.uuid4()
    claimed = _claim_lane(token, timedelta(seconds=config["LANE_LEASE_SECONDS"]))
    if claimed is None:
        return None
    lane, published = claimed
    rows = _read_lane(lane, config["DISPATCH_BATCH"])
    if not rows:
        _release(lane, token)
        return 0
    transport = transport or outbox_transport()
    try:
        _publish(transport, rows, lane, published, token)
    except TransportError as exc:
        lane_row = DispatchLane.objects.get(lane=lane)
        failures = lane_row.failures + 1
        delay = backoff_seconds(
            failures, base=config["BACKOFF_BASE_SECONDS"], cap=config["BACKOFF_MAX_SECONDS"]
        )
        _release(
            lane,
            token,
            failures=failures,
            next_attempt_at=timezone.now() + timedelta(seconds=delay),
            last_error=str(exc)[:500],
        )
        logger.warning("lane %s: publish failed (%s); retry in %.1fs", lane, exc, delay)
        raise
    with transaction.atomic():
        _move_published(rows)
        count_deliveries(delivered=len(rows))
        _release(
            lane,
            token,
            failures=0,
            next_attempt_at=timezone.now(),
            last_error="",
            published_through=Greatest(F("published_through"), rows[-1][0]),
        )
    return len(rows)


def drain(*, transport=None, max_seconds: float = 50.0) -> int:
    """Dispatch until no lane has due rows (or time is up); the number published.

    Stops at the first transport failure: the lane has been backed off, and the
    other lanes would fail the same way against the same Redis.
    """
    transport = transport or outbox_transport()
    ensure_lanes()
    deadline = time.monotonic() + max_seconds
    total = 0
    if isinstance(transport, RedisStreamTransport):
        try:
            # Lanes with nothing new to send would otherwise never notice a loss.
            redrive_lost_lanes(transport)
        except TransportError:
            return total
    while time.monotonic() < deadline:
        try:
            moved = dispatch_lane_once(transport)
        except TransportError:
            break
        if moved is None:
            break
        total += moved
    return total


def dispatch_kicked() -> int:
    """The run a commit's kick asked for (apps.eventing.services.kick_dispatcher)."""
    # Clear the kick flag before looking at the outbox: a commit after this point
    # kicks again, so no event waits for the sweep.
    clear_kick(KICK_KEY)
    # New topics' names ride on the kick their commit sent (apps.eventing.signals).
    send_follow_task()
    return drain()


def dispatch_sweep() -> int:
    """Beat's safety net for lost kicks and backed-off lanes. Several may overlap:
    lanes are leased, so they share the work instead of repeating it."""
    send_follow_task()
    return drain()
