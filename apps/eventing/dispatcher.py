"""The outbox dispatcher: outbox rows → Redis streams, at least once, in order per aggregate.

One pass:
1. lease a lane that has due rows (a short transaction: `FOR UPDATE SKIP LOCKED` on
   the lane rows, so concurrent dispatchers each get a different lane);
2. read that lane's oldest rows, a bounded batch, in write order (no locks held);
3. publish them (the network call, outside any transaction);
4. delete what was published, each row under its owning tenant's scope, count it and
   release the lane (one short transaction).

A dispatcher that dies between 3 and 4 leaves its rows in place; when its lease runs
out another dispatcher publishes them again, in the same order. Consumers deduplicate
on `event_id`, so that is at-least-once delivery without loss or reordering. A
transport failure backs the lane off exponentially and keeps the rows.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from apps.core.scope import owner_scope, system_scope
from apps.eventing.envelope import Envelope
from apps.eventing.models import LANES, DeliveryCount, DispatchLane, OutboxEvent
from apps.eventing.services import backoff_seconds
from apps.eventing.transports import RedisStreamTransport, TransportError

logger = logging.getLogger(__name__)

OUTBOX = OutboxEvent._meta.db_table
LANE = DispatchLane._meta.db_table


def ensure_lanes() -> None:
    """Create the lane rows that do not exist yet (cheap; run at the start of each drain)."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {LANE} (lane, leased_until, failures, next_attempt_at, last_error)"  # noqa: S608
            " SELECT g, now(), 0, now(), '' FROM generate_series(0, %s) AS g"
            " ON CONFLICT (lane) DO NOTHING",
            [LANES - 1],
        )


def _claim_lane(token: uuid.UUID, lease: timedelta) -> int | None:
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
            RETURNING lane
            """,  # noqa: S608 - table names only
            [lease, token],
        )
        row = cursor.fetchone()
    return row[0] if row else None


ENVELOPE_COLUMNS = (
    "event_id",
    "topic",
    "event_type",
    "schema_version",
    "tenant_id",
    "aggregate_type",
    "aggregate_id",
    "occurred_at",
    "correlation_id",
    "causation_id",
    "payload",
)


def _read_lane(lane: int, batch: int) -> list[tuple[int, Envelope]]:
    """The lane's oldest rows as (id, envelope), in write order. Plain tuples, not model
    instances: building 500 models per batch cost more than publishing them."""
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


def _delete_published(rows: list[tuple[int, Envelope]]) -> None:
    by_tenant: dict = defaultdict(list)
    for row_id, envelope in rows:
        by_tenant[envelope.tenant_id].append(row_id)
    for tenant_id, ids in by_tenant.items():
        # Every mutation runs in the owning tenant's scope; platform-wide events
        # (no tenant) are written and removed in the system scope.
        with owner_scope(tenant_id):
            with connection.cursor() as cursor:
                cursor.execute(f"DELETE FROM {OUTBOX} WHERE id = ANY(%s)", [ids])  # noqa: S608


def count_deliveries(*, subscription_id=None, delivered: int = 0, failed: int = 0) -> None:
    minute = timezone.now().replace(second=0, microsecond=0)
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {DeliveryCount._meta.db_table} (minute, subscription_id, delivered, failed)
            VALUES (%s, %s, %s, %s)
            ON CONFLICT (minute, subscription_id)
            DO UPDATE SET delivered = {DeliveryCount._meta.db_table}.delivered + EXCLUDED.delivered,
                          failed = {DeliveryCount._meta.db_table}.failed + EXCLUDED.failed
            """,  # noqa: S608 - table name only
            [minute, subscription_id, delivered, failed],
        )


def _test_pause_after_publish() -> None:
    # Lets the crash test kill a dispatcher between publish and delete, deterministically.
    marker = os.environ.get("STEWARD_TEST_PAUSE_AFTER_PUBLISH")
    if marker:
        open(marker, "w").close()  # noqa: SIM115
        time.sleep(3600)


def dispatch_lane_once(transport=None) -> int | None:
    """Lease one due lane and move one batch of it: the number of envelopes published,
    or None when no lane has due rows."""
    config = settings.STEWARD_EVENTING
    token = uuid.uuid4()
    lane = _claim_lane(token, timedelta(seconds=config["LANE_LEASE_SECONDS"]))
    if lane is None:
        return None
    rows = _read_lane(lane, config["DISPATCH_BATCH"])
    if not rows:
        _release(lane, token)
        return 0
    transport = transport or RedisStreamTransport()
    try:
        transport.publish([envelope for _, envelope in rows])
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
    _test_pause_after_publish()
    with transaction.atomic():
        _delete_published(rows)
        count_deliveries(delivered=len(rows))
        _release(lane, token, failures=0, next_attempt_at=timezone.now(), last_error="")
    return len(rows)


def drain(*, transport=None, max_seconds: float = 50.0) -> int:
    """Dispatch until no lane has due rows (or time is up); the number published.

    Stops at the first transport failure: the lane has been backed off, and the
    other lanes would fail the same way against the same Redis.
    """
    transport = transport or RedisStreamTransport()
    ensure_lanes()
    deadline = time.monotonic() + max_seconds
    total = 0
    while time.monotonic() < deadline:
        try:
            moved = dispatch_lane_once(transport)
        except TransportError:
            break
        if moved is None:
            break
        total += moved
    return total


def outbox_backlog() -> tuple[int, float | None]:
    """How many envelopes wait, and the age in seconds of the oldest."""
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {OUTBOX}")  # noqa: S608
        (count,) = cursor.fetchone()
        # The oldest by write order, found through the primary key, not a scan.
        age = "greatest(0, extract(epoch FROM clock_timestamp() - occurred_at))"
        cursor.execute(f"SELECT {age} FROM {OUTBOX} ORDER BY id LIMIT 1")  # noqa: S608
        row = cursor.fetchone()
    return count, float(row[0]) if row else None
