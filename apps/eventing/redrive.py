"""Re-driving a Redis that lost its streams: every event dispatched within the inbox
window is published again, from PostgreSQL, in order per lane.

How a loss is noticed. Each lane's row in PostgreSQL holds `published_through`, the
highest outbox id of the lane published and logged; Redis holds its own mark per lane
(transports.HIGH_WATER_KEY), raised by the same script that appends the lane's batch
to the streams. A Redis that holds less than PostgreSQL says it has is missing
entries: an empty one (restarted without its files, FLUSHALL) has no marks at all; a
stale replica promoted in a failover has older marks, and the entries up to them
(replication keeps command order, so a replica with a mark has the entries before it).
Checking a mark is one HGETALL and a 16-row read, so every drain does it; and the
publish script refuses a lane's batch when the mark is behind, so no new event ever
goes out ahead of older ones a Redis lost. Stream lengths, last ids or missing groups
would not do: trimming shortens streams, a new topic has no stream yet, and a stale
replica has groups and ids, only older ones.

How it is re-driven. The dispatched log (models.DispatchedEvent) holds every envelope
published within the window, moved there from the outbox as it was deleted. The lanes
that lost entries are leased, as a dispatcher leases them, so no dispatcher publishes
on them meanwhile (per-aggregate order: an aggregate's events all go through one lane)
and of two processes noticing the same loss one re-drives; the marks are checked again
under the lease, so a check that waited for another's re-drive finds nothing left.
The log is read in id order from each lane's Redis mark, and each batch raises the
mark: a second loss during a re-drive is noticed again, from where Redis is then.
Consumers' inboxes (and webhook receivers, on `webhook-id`) absorb the events they
had already handled; events older than the inbox window are not re-driven, because
their inbox rows are gone and they would be handled twice.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections import defaultdict
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string

from apps.core.scope import system_scope
from apps.eventing.envelope import Envelope
from apps.eventing.models import DispatchedEvent, DispatchLane
from apps.eventing.transports import HIGH_WATER_KEY, RedisStreamTransport, stream_key
from apps.registry import selectors as registry_selectors

logger = logging.getLogger(__name__)

LANE = DispatchLane._meta.db_table
# The envelope's fields, as the outbox and the log name their columns.
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


@functools.cache
def _window_source():
    return import_string(settings.STEWARD_INBOX_WINDOW_SOURCE)


def window() -> timedelta | None:
    """How far back a re-drive goes: the inbox's deduplication window, which the
    retention rule steward-event-receipts decides (governance, above eventing, answers
    through the port STEWARD_INBOX_WINDOW_SOURCE names, as the outbox's port is named).
    One number for both: a re-drive never reaches past what the inboxes remember, and no
    setting can say otherwise. None: no rule expires inbox rows, so neither does the
    window (everything the dispatched log holds)."""
    return _window_source()()


def redis_marks(transport: RedisStreamTransport) -> dict[int, int]:
    return {int(k): int(v) for k, v in transport.client.hgetall(HIGH_WATER_KEY).items()}


def lost_lanes(transport: RedisStreamTransport, lanes=None) -> dict[int, tuple[int, int]]:
    """Lane -> (what Redis holds, what was published) for the lanes Redis is behind on."""
    with system_scope():
        rows = DispatchLane.objects.filter(published_through__gt=0)
        if lanes is not None:
            rows = rows.filter(lane__in=list(lanes))
        published = dict(rows.values_list("lane", "published_through"))
    if not published:
        return {}
    marks = redis_marks(transport)
    return {
        lane: (marks.get(lane, 0), through)
        for lane, through in published.items()
        if marks.get(lane, 0) < through
    }


def _lease(lanes: list[int], token: uuid.UUID) -> list[int]:
    """Lease those of `lanes` no dispatcher holds; the ones leased."""
    seconds = settings.STEWARD_EVENTING["LANE_LEASE_SECONDS"]
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(
            f"UPDATE {LANE} SET leased_until = now() + %s, lease_token = %s"  # noqa: S608
            " WHERE lane = ANY(%s) AND leased_until <= now() RETURNING lane",
            [timedelta(seconds=seconds), token, lanes],
        )
        return sorted(row[0] for row in cursor.fetchall())


def _renew(token: uuid.UUID) -> None:
    seconds = settings.STEWARD_EVENTING["LANE_LEASE_SECONDS"]
    DispatchLane.objects.filter(lease_token=token).update(
        leased_until=timezone.now() + timedelta(seconds=seconds)
    )


def _release(token: uuid.UUID) -> None:
    DispatchLane.objects.filter(lease_token=token).update(
        leased_until=timezone.now(), lease_token=None
    )


def _read_log(floors: dict[int, int], after: int, cutoff, batch: int) -> list[tuple]:
    """The next `batch` logged rows past `after` of the lanes, each past its floor, in
    id order (the key's order: no index but the primary key is needed)."""
    past_floor = Q()
    for lane, floor in floors.items():
        past_floor |= Q(lane=lane, id__gt=floor)
    within = Q(dispatched_at__gte=cutoff) if cutoff is not None else Q()
    with system_scope():
        return list(
            DispatchedEvent.objects.filter(past_floor, within, id__gt=after)
            .order_by("id")
            .values_list("id", "lane", *ENVELOPE_COLUMNS)[:batch]
        )


def _subscription_groups() -> list[tuple[str, str]]:
    """(stream, group) of every active subscription: a Redis that lost its streams lost
    the groups too, and a group made after the re-driven entries would skip them."""
    return [
        (stream_key(s.topic.name), s.group_name) for s in registry_selectors.active_subscriptions()
    ]


def redrive_leased(
    lanes: dict[int, tuple[int, int]], transport: RedisStreamTransport, token: uuid.UUID
) -> int:
    """Publish again, in order, what each lane (leased under `token`) logged past what
    Redis holds of it, and raise its mark to what was published; how many envelopes."""
    span = window()
    cutoff = timezone.now() - span if span is not None else None
    batch = settings.STEWARD_EVENTING["DISPATCH_BATCH"]
    marks = {lane: have for lane, (have, _) in lanes.items()}
    floors = dict(marks)
    transport.forget_groups()
    groups = _subscription_groups()
    after, total = min(floors.values()), 0
    while True:
        rows = _read_log(floors, after, cutoff, batch)
        if not rows:
            break
        by_lane: dict[int, list] = defaultdict(list)
        for row in rows:
            by_lane[row[1]].append(row)
        for lane, lane_rows in by_lane.items():
            envelopes = [Envelope(*row[2:]) for row in lane_rows]
            through = lane_rows[-1][0]
            transport.publish(
                envelopes, lane=lane, expected=marks[lane], through=through, groups=groups
            )
            groups = ()
            marks[lane] = through
        total += len(rows)
        after = rows[-1][0]
        _renew(token)
    for lane, (_, published) in lanes.items():
        # Entries older than the window are not sent again; the mark still says the
        # lane is whole, or the loss would be noticed on every drain.
        transport.publish([], lane=lane, expected=marks[lane], through=published, groups=groups)
        groups = ()
    logger.warning(
        "Redis had lost entries of lanes %s: %s envelopes %s re-driven",
        sorted(lanes),
        total,
        f"of the last {span}" if span is not None else "of the whole log",
    )
    return total


def redrive_lost_lanes(transport: RedisStreamTransport | None = None) -> int:
    """Notice the lanes Redis lost entries of and re-drive them; how many envelopes.

    Lanes a dispatcher holds are left to it: its publish script refuses the lane's
    next batch, and it re-drives the lane itself before publishing (dispatcher).
    """
    transport = transport or RedisStreamTransport()
    lost = lost_lanes(transport)
    if not lost:
        return 0
    # Its groups may be gone too: made sure of again before this process publishes.
    transport.forget_groups()
    token = uuid.uuid4()
    leased = _lease(sorted(lost), token)
    try:
        # Again under the lease: another process may have re-driven them meanwhile.
        lost = lost_lanes(transport, leased) if leased else {}
        return redrive_leased(lost, transport, token) if lost else 0
    finally:
        _release(token)
