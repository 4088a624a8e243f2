"""Reading the streams: the runners of Steward's own consumers and of webhook subscriptions.

Every subscription reads its topics' streams through its own Redis consumer group, in
a runner thread of the `run_consumers` process:

- Steward's own consumers (`@consumer(...)`, apps.eventing.consumer_registry) run
  once per event through the inbox (apps.eventing.inbox), in the same transaction as
  the handler's effects.
- Webhook subscriptions POST each envelope, signed, and count on the receiver to
  deduplicate on `webhook-id` (the event id).

A failure is retried in place with exponential back-off, so one subscription keeps
its events in order while the other runner threads carry on; after MAX_ATTEMPTS the
envelope goes to dead letters and the runner moves on. Entries left pending by a
runner that died are claimed by another after RECLAIM_IDLE_SECONDS (XAUTOCLAIM), and
go to dead letters once Redis has delivered them MAX_ATTEMPTS times.

The runners write nothing themselves: dead letters, deliveries' counts and each
subscription's delivery health go through eventing's services (apps.eventing.services),
which write the registry's catalog rows through the registry's.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import close_old_connections, connection
from django.utils import timezone

from apps.core.redis import REDIS_ERRORS, get_redis
from apps.core.scope import system_scope
from apps.eventing import delivery_metrics, services
from apps.eventing.consumer_registry import HANDLERS, Handler
from apps.eventing.envelope import Envelope
from apps.eventing.inbox import handle_envelopes
from apps.eventing.transports import STREAM_PREFIX, WebhookTransport, ensure_group, stream_key
from apps.registry import selectors as registry_selectors
from apps.registry.models import Subscription
from apps.tenancy.models import Tenant

logger = logging.getLogger(__name__)


# --------------------------------------------------------------------------- runners


@dataclass
class Entry:
    stream: str
    entry_id: str
    envelope: Envelope | None
    raw_error: str = ""
    deliveries: int = 1


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else value


def unreadable_envelope(entry: Entry) -> Envelope:
    """A stand-in envelope for a stream entry that could not be read, so it can be
    dead-lettered like any other: its id derives from the entry, its payload names it."""
    topic = entry.stream.removeprefix(STREAM_PREFIX)
    return Envelope(
        event_id=uuid.uuid5(uuid.NAMESPACE_URL, f"{entry.stream}/{entry.entry_id}"),
        topic=topic,
        event_type="unreadable",
        schema_version=0,
        tenant_id=None,
        aggregate_type="stream-entry",
        aggregate_id=entry.entry_id,
        occurred_at=timezone.now(),
        correlation_id="",
        causation_id="",
        payload={"stream": entry.stream, "entry_id": entry.entry_id},
    )


def _parse(stream: str, entry_id, fields: dict) -> Entry:
    stream, entry_id = _text(stream), _text(entry_id)
    raw = fields.get(b"envelope") or fields.get("envelope")
    try:
        return Entry(stream, entry_id, Envelope.from_json(raw))
    except Exception as exc:  # noqa: BLE001 - a malformed entry must not stop the stream
        return Entry(stream, entry_id, None, raw_error=f"unreadable entry: {exc}")


# Acquire or renew a runner's lease on its group: SET if free, extend if ours.
LEASE_SCRIPT = """
local holder = redis.call('get', KEYS[1])
if not holder then
  redis.call('set', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 2
elseif holder == ARGV[1] then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 1
end
return 0
"""
RELEASE_SCRIPT = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""
LEASE_SECONDS = 30


class LeaseLost(Exception):
    """Another runner holds this group now; leave the entry pending for it."""


@dataclass
class Runner:
    """Reads one consumer group's streams (one per subscribed topic) and delivers in order.

    One runner per group is active at a time, across every `run_consumers` process: it
    holds a lease in Redis, and the others wait to take over. Reading one group from
    several processes at once would deliver an aggregate's events in parallel, out of
    order; the standbys make a replica's death cost seconds, not events.
    """

    subscriptions: list[Subscription]  # one per topic, all read through the same group
    deliver: Callable[[list[Envelope]], None]
    batch: int = 500
    stop: threading.Event = field(default_factory=threading.Event)

    def __post_init__(self):
        self.group = self.subscriptions[0].group_name
        self.by_topic = {s.topic.name: s for s in self.subscriptions}
        self.streams = [stream_key(topic) for topic in self.by_topic]
        self.name = f"{socket.gethostname()}-{os.getpid()}-{id(self)}"
        self.config = settings.STEWARD_EVENTING

    def subscription_of(self, envelope: Envelope) -> Subscription:
        return self.by_topic.get(envelope.topic) or self.subscriptions[0]

    # The loop --------------------------------------------------------------

    def run_forever(self) -> None:
        client = get_redis()
        try:
            self._loop(client)
        finally:
            with contextlib.suppress(*REDIS_ERRORS):
                client.eval(RELEASE_SCRIPT, 1, self.lease_key, self.name)
            connection.close()  # this thread's own connection

    @property
    def lease_key(self) -> str:
        return f"steward:runner:{self.group}"

    def hold_lease(self, client) -> int:
        """2: just acquired, 1: renewed, 0: another runner holds the group."""
        return int(client.eval(LEASE_SCRIPT, 1, self.lease_key, self.name, LEASE_SECONDS * 1000))

    def _loop(self, client) -> None:
        self._client = client
        last_reclaim = 0.0
        while not self.stop.is_set():
            try:
                lease = self.hold_lease(client)
                if not lease:
                    self.stop.wait(1.0)  # standby
                    continue
                for stream in self.streams:
                    ensure_group(client, stream, self.group)
                now = timezone.now().timestamp()
                if lease == 2:
                    # Whatever is pending belongs to a runner that is gone: take it now.
                    self.reclaim(client, idle_ms=0)
                    last_reclaim = now
                elif now - last_reclaim > self.config["RECLAIM_IDLE_SECONDS"] / 2:
                    self.reclaim(client)
                    last_reclaim = now
                self.read_once(client, block_ms=1000)
            except LeaseLost:
                logger.warning("%s: lost the lease; another runner carries on", self.group)
            except REDIS_ERRORS as exc:
                logger.warning("%s: Redis unavailable (%s); retrying", self.group, exc)
                delivery_metrics.count_runner_error(self.group, "broker_lost")
                self.stop.wait(1.0)
            except Exception:  # noqa: BLE001 - a runner thread must survive anything
                logger.exception("%s: runner error", self.group)
                delivery_metrics.count_runner_error(self.group, "error")
                self.stop.wait(1.0)
            finally:
                close_old_connections()

    def read_once(self, client, *, block_ms: int | None = None) -> int:
        response = client.xreadgroup(
            self.group, self.name, {s: ">" for s in self.streams}, count=self.batch, block=block_ms
        )
        entries = [_parse(stream, eid, f) for stream, items in response or [] for eid, f in items]
        self.process(client, entries)
        return len(entries)

    def reclaim(self, client, idle_ms: int | None = None) -> int:
        """Take over entries another runner left pending for too long."""
        if idle_ms is None:
            idle_ms = self.config["RECLAIM_IDLE_SECONDS"] * 1000
        total = 0
        for stream in self.streams:
            start = "0-0"
            while True:
                start, items, *_ = client.xautoclaim(
                    stream, self.group, self.name, idle_ms, start_id=start, count=self.batch
                )
                if not items:
                    break
                counts = {
                    (
                        p["message_id"].decode()
                        if isinstance(p["message_id"], bytes)
                        else p["message_id"]
                    ): p["times_delivered"]
                    for p in client.xpending_range(
                        stream, self.group, min=items[0][0], max=items[-1][0], count=len(items)
                    )
                }
                trimmed = [eid for eid, f in items if not f]  # capped away from the stream
                if trimmed:
                    client.xack(stream, self.group, *trimmed)
                entries = [_parse(stream, eid, f) for eid, f in items if f]
                for entry in entries:
                    entry.deliveries = counts.get(entry.entry_id, 1)
                self.process(client, entries)
                total += len(entries)
                if start in (b"0-0", "0-0"):
                    break
        return total

    # Delivery ---------------------------------------------------------------

    def process(self, client, entries: list[Entry]) -> None:
        if not entries:
            return
        max_attempts = self.config["MAX_ATTEMPTS"]
        ready = []
        for entry in entries:
            if entry.envelope is None:
                # Kept for an operator rather than dropped: it names the stream entry.
                services.dead_letter_record(
                    subscription=self.subscriptions[0],
                    envelope=unreadable_envelope(entry),
                    error=entry.raw_error,
                    attempts=entry.deliveries,
                )
                client.xack(entry.stream, self.group, entry.entry_id)
            elif entry.deliveries > max_attempts:
                services.dead_letter_record(
                    subscription=self.subscription_of(entry.envelope),
                    envelope=entry.envelope,
                    error=f"delivered {entry.deliveries} times without being acknowledged",
                    attempts=entry.deliveries,
                )
                client.xack(entry.stream, self.group, entry.entry_id)
            else:
                ready.append(entry)
        ready = self._without_deleted_tenants(client, ready)
        if not ready:
            return
        if len(ready) == 1:
            self.deliver_one(ready[0])
            client.xack(ready[0].stream, self.group, ready[0].entry_id)
            return
        try:
            # The whole batch in one go first; it is the common case and much cheaper.
            self.deliver([entry.envelope for entry in ready])
        except Exception:  # noqa: BLE001 - then one at a time, each with its own retries
            for entry in ready:
                self.deliver_one(entry)
                client.xack(entry.stream, self.group, entry.entry_id)
            return
        for envelope_topic in {entry.envelope.topic for entry in ready}:
            subscription = self.by_topic.get(envelope_topic)
            if subscription is not None:
                count = sum(1 for entry in ready if entry.envelope.topic == envelope_topic)
                services.subscription_record_delivery(subscription=subscription, delivered=count)
        for stream in {entry.stream for entry in ready}:
            client.xack(stream, self.group, *[e.entry_id for e in ready if e.stream == stream])

    def _without_deleted_tenants(self, client, entries: list[Entry]) -> list[Entry]:
        """Acknowledge, with a warning, the events of tenants deleted since they were
        sent: nothing can record them (their inbox and dead-letter rows would name a
        tenant that is gone), and left pending they would block the group for good."""
        gone = tenants_gone([entry.envelope for entry in entries])
        if not gone:
            return entries
        kept = []
        for entry in entries:
            tenant_id = entry.envelope.tenant_id
            if tenant_id not in gone:
                kept.append(entry)
                continue
            logger.warning(
                "%s: dropped event %s (%s): its tenant %s no longer exists",
                self.group,
                entry.envelope.event_id,
                entry.envelope.event_type,
                tenant_id,
            )
            client.xack(entry.stream, self.group, entry.entry_id)
            delivery_metrics.count_dropped(self.group, "tenant_deleted")
        return kept

    def deliver_one(self, entry: Entry) -> None:
        """Try one envelope until it succeeds or runs out of attempts (then dead-letter)."""
        config = self.config
        subscription = self.subscription_of(entry.envelope)
        attempt = entry.deliveries
        while True:
            try:
                self.deliver([entry.envelope])
            except Exception as exc:  # noqa: BLE001
                error = f"{type(exc).__name__}: {exc}"
                services.subscription_record_failure(subscription=subscription, error=error)
                if attempt >= config["MAX_ATTEMPTS"]:
                    services.dead_letter_record(
                        subscription=subscription,
                        envelope=entry.envelope,
                        error=error,
                        attempts=attempt,
                    )
                    return
                if self.stop.is_set():
                    raise  # stopping: leave it pending for the next runner
                delay = services.backoff_seconds(
                    attempt, base=config["BACKOFF_BASE_SECONDS"], cap=config["BACKOFF_MAX_SECONDS"]
                )
                attempt += 1
                self._wait_holding_lease(delay)
            else:
                services.subscription_record_delivery(subscription=subscription, delivered=1)
                return

    def _wait_holding_lease(self, seconds: float) -> None:
        """Back off without letting the lease lapse (a back-off can outlast it)."""
        client = getattr(self, "_client", None)
        deadline = time.monotonic() + seconds
        while not self.stop.is_set():
            if client is not None and not self.hold_lease(client):
                raise LeaseLost(self.group)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self.stop.wait(min(remaining, LEASE_SECONDS / 3))


def tenants_gone(envelopes: list[Envelope]) -> set:
    """The tenants these envelopes name that no longer exist (deleted since the events
    were sent), which every runner drops, whatever carried the events."""
    named = {e.tenant_id for e in envelopes if e.tenant_id is not None}
    if not named:
        return set()
    with system_scope():
        present = set(Tenant.objects.filter(pk__in=named).values_list("pk", flat=True))
    return named - present


def consumer_runner(handler: Handler, subscriptions: list[Subscription]) -> Runner:
    return Runner(
        subscriptions=subscriptions,
        deliver=lambda envelopes: handle_envelopes(handler, envelopes),
    )


def webhook_delivery(subscription: Subscription, transport: WebhookTransport | None = None):
    """How a runner hands events to a webhook subscription, whatever carried them: one
    request per event."""
    transport = transport or WebhookTransport()

    def deliver(envelopes: list[Envelope]) -> None:
        for envelope in envelopes:
            transport.publish([envelope], subscription=subscription)

    return deliver


def webhook_runner(subscription: Subscription, transport: WebhookTransport | None = None) -> Runner:
    deliver = webhook_delivery(subscription, transport)
    # One at a time: a webhook batch that fails halfway must not resend the first half.
    return Runner(subscriptions=[subscription], deliver=deliver, batch=1)


def build_runners() -> list[Runner]:
    """The runners this process should run, from the handler registry and the catalog."""
    if settings.STEWARD_EVENTING["TRANSPORT"] == "amqp":
        from apps.eventing.amqp import build_amqp_runners  # imports this module

        return build_amqp_runners()
    runners = []
    internal = registry_selectors.active_subscriptions(Subscription.Transport.REDIS_STREAM)
    for handler in HANDLERS.values():
        mine = [s for s in internal if s.consumer.name == handler.consumer]
        if mine:
            runners.append(consumer_runner(handler, mine))
    for subscription in registry_selectors.active_subscriptions(Subscription.Transport.WEBHOOK):
        runners.append(webhook_runner(subscription))
    return runners
