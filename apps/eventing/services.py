"""Eventing's services: the use cases of the outbox, Steward's consumers' subscriptions,
deliveries and dead letters, and the streams' upkeep.

Eventing writes through three service modules, one per concern: this one, `dispatcher`
(the outbox's dispatcher) and `effects` (uncertain effects). Tasks, views, the API, the
attention queue, management commands and the runners call them; the other modules
(consumers' runners, inbox, redrive, transports, lag, streams) are the machinery they
use and write nothing of their own accord.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import uuid
import zlib
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

import redis
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR, Actor, request_id
from apps.core.enqueue import enqueue_on_commit
from apps.core.errors import InvalidTransition, ValidationFailed
from apps.core.kick import kick
from apps.core.outbox import NewEvent
from apps.core.redis import REDIS_ERRORS, get_redis
from apps.core.scope import owner_scope, system_scope
from apps.eventing import delivery_metrics, lag, streams
from apps.eventing.codes import EventingCode
from apps.eventing.consumer_registry import HANDLERS
from apps.eventing.envelope import Envelope
from apps.eventing.inbox import handle_envelopes
from apps.eventing.models import LANES, DeadLetter, DeliveryCount, OutboxEvent
from apps.eventing.transports import WebhookTransport, ensure_group, stream_key
from apps.registry import selectors as registry_selectors
from apps.registry import services as registry_services
from apps.registry.codes import RegistryCode
from apps.registry.models import Subscription
from apps.registry.selectors import resolve_topic
from apps.tenancy.audit import audit_record

logger = logging.getLogger(__name__)


class UnknownTopic(ValidationFailed):
    code = RegistryCode.UNKNOWN_TOPIC


class PayloadNotJson(ValidationFailed):
    code = EventingCode.PAYLOAD_NOT_JSON


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


# --------------------------------------------------------------------------- deliveries


def count_deliveries(*, subscription_id=None, delivered: int = 0, failed: int = 0) -> None:
    """Add to this minute's deliveries: to the streams (no subscription) or to one
    subscription."""
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


def subscription_record_delivery(*, subscription: Subscription, delivered: int) -> None:
    """The subscription took `delivered` envelopes: its health and the minute's count."""
    registry_services.subscription_mark_delivered(subscription_id=subscription.pk)
    count_deliveries(subscription_id=subscription.pk, delivered=delivered)
    delivery_metrics.count_delivery(subscription.group_name, "delivered", delivered)


def subscription_record_failure(*, subscription: Subscription, error: str) -> None:
    registry_services.subscription_mark_failed(subscription_id=subscription.pk, error=error)
    delivery_metrics.count_delivery(subscription.group_name, "failed")


# --------------------------------------------------------------------------- subscriptions


def sync_consumer_subscriptions(*, topic_names: Iterable[str] | None = None) -> list[Subscription]:
    """Make the catalog show each registered consumer's subscriptions (idempotent), on
    every topic or, with `topic_names`, on those topics only."""
    subscriptions = []
    for handler in HANDLERS.values():
        wanted = handler.topics
        if topic_names is not None:
            wanted = [n for n in topic_names if handler.topics is None or n in handler.topics]
            if not wanted:
                continue
        service = registry_services.service_ensure(
            actor=SYSTEM_ACTOR, name=handler.consumer, description="Steward's own consumer"
        )
        for topic in registry_selectors.topics_named(wanted):
            subscriptions.append(
                registry_services.subscription_ensure(
                    actor=SYSTEM_ACTOR,
                    consumer=service,
                    topic=topic,
                    transport=Subscription.Transport.REDIS_STREAM,
                )
            )
    return subscriptions


def ensure_subscription_groups(subscriptions: Iterable[Subscription]) -> None:
    """Each subscription's consumer group on its topic's stream (made if missing); under
    the AMQP transport, its lane queues bound to its topic's exchange."""
    if settings.STEWARD_EVENTING["TRANSPORT"] == "amqp":
        from apps.eventing.amqp import declare_subscriptions  # kombu only where chosen

        declare_subscriptions(list(subscriptions))
        return
    client = get_redis()
    for subscription in subscriptions:
        ensure_group(client, stream_key(subscription.topic.name), subscription.group_name)


def follow_new_topics(*, names: Iterable[str]) -> int:
    """Steward's consumers subscribed to these new topics, their groups made (the
    `eventing.follow_new_topics` task); the subscriptions made sure of."""
    subscriptions = sync_consumer_subscriptions(topic_names=names)
    ensure_subscription_groups(subscriptions)
    return len(subscriptions)


# --------------------------------------------------------------------------- dead letters


def dead_letter_record(
    *, subscription: Subscription, envelope: Envelope, error: str, attempts: int
) -> None:
    """Keep an envelope the subscription could not take for an operator, and count the
    failed delivery. An envelope already dead for the subscription (a reclaimed
    duplicate) is not kept twice."""
    with owner_scope(envelope.tenant_id):
        try:
            with transaction.atomic():
                DeadLetter.objects.create(
                    subscription=subscription,
                    event_id=envelope.event_id,
                    topic=envelope.topic,
                    event_type=envelope.event_type,
                    tenant_id=envelope.tenant_id,
                    envelope=envelope.to_dict(),
                    error=error[:5000],
                    attempts=attempts,
                )
        except IntegrityError as exc:
            constraint = getattr(getattr(exc.__cause__, "diag", None), "constraint_name", None)
            if constraint != "dead_letter_once":
                raise  # not a duplicate: the entry stays pending rather than vanish
    count_deliveries(subscription_id=subscription.pk, failed=1)
    delivery_metrics.count_delivery(subscription.group_name, "dead_lettered")
    logger.error(
        "dead letter: %s %s for %s after %s attempts: %s",
        envelope.topic,
        envelope.event_id,
        subscription,
        attempts,
        error[:200],
    )


def _resolve_dead_letter(
    *, actor: Actor, dead_letter: DeadLetter, state: str, action: str
) -> DeadLetter:
    # A dead letter is its consumer's: only that service's accounts and operators act.
    registry_services.require_speaks_for(actor, dead_letter.subscription.consumer.name)
    tenant_id = dead_letter.tenant_id
    with owner_scope(tenant_id):
        # Conditional, along the table: of two operators pressing the button at once,
        # one wins and the other is told; the envelope is replayed at most once per
        # dead letter.
        DeadLetter.TRANSITIONS.move(
            dead_letter,
            state,
            detail="This dead letter has already been replayed or discarded.",
            code=EventingCode.DEAD_LETTER_RESOLVED,
            resolved_at=timezone.now(),
            resolved_by=actor.label[:150],
        )
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


def _deliver_again(subscription: Subscription, envelope: Envelope) -> None:
    if subscription.transport == Subscription.Transport.WEBHOOK:
        WebhookTransport().publish([envelope], subscription=subscription)
        return
    handler = HANDLERS.get(subscription.consumer.name)
    if handler is None:
        raise LookupError(f"no handler is registered for {subscription.consumer.name}")
    handle_envelopes(handler, [envelope])


def dead_letter_redeliver(*, dead_letter_id: int) -> str:
    """Deliver a queued replay to its own subscription only.

    At least once: the envelope is delivered, then the dead letter is marked replayed
    (a crash in between delivers it again; receivers deduplicate on the event id). A
    failure makes a new dead letter and the replayed one stays as history, so an
    operator sees the outcome either way; of two deliveries of the same replay (its
    task and the sweep), only the one that marks it makes that new dead letter.
    """
    with system_scope():
        dead = (
            DeadLetter.objects.select_related("subscription__consumer", "subscription__topic")
            .filter(pk=dead_letter_id, state=DeadLetter.State.REPLAYING)
            .first()
        )
    if dead is None:
        return "skipped"
    subscription = dead.subscription
    envelope = Envelope.from_dict(dead.envelope)
    error = ""
    try:
        _deliver_again(subscription, envelope)
    except Exception as exc:  # noqa: BLE001 - recorded as a new dead letter
        error = f"replay: {type(exc).__name__}: {exc}"
    with owner_scope(dead.tenant_id), transaction.atomic():
        try:
            DeadLetter.TRANSITIONS.move(dead, DeadLetter.State.REPLAYED)
        except InvalidTransition:
            marked = False
        else:
            marked = True
        if error and marked:
            dead_letter_record(
                subscription=subscription, envelope=envelope, error=error, attempts=1
            )
    if error:
        return "failed"
    subscription_record_delivery(subscription=subscription, delivered=1)
    return "delivered"


def dead_letters_redeliver_queued(*, older_than_seconds: int = 30) -> int:
    """Deliver replays whose task never ran (the sweep behind dead_letter_replay)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    with system_scope():
        queued = list(
            DeadLetter.objects.filter(
                state=DeadLetter.State.REPLAYING, resolved_at__lt=cutoff
            ).values_list("pk", flat=True)[:100]
        )
    return sum(1 for pk in queued if dead_letter_redeliver(dead_letter_id=pk) == "delivered")


# --------------------------------------------------------------------------- streams' upkeep


def streams_trim() -> dict[str, int]:
    """Trim each topic's stream to what its groups still need, within the hard cap.

    Entries every consumer group has acknowledged are removed (XTRIM MINID). A stream
    still longer than STREAM_MAXLEN is cut to it, and the groups that lose unread
    entries that way are named in an error: a consumer that far behind is broken,
    and memory must not run out because of it.
    """
    client = get_redis()
    cap = settings.STEWARD_EVENTING["STREAM_MAXLEN"]
    trimmed: dict[str, int] = {}
    for topic in registry_selectors.topic_names():
        key = stream_key(topic)
        try:
            groups = client.xinfo_groups(key)
        except redis.ResponseError:
            continue  # no stream yet
        removed = 0
        floor = streams.consumed_floor(client, key, groups)
        if floor is not None:
            removed += client.xtrim(key, minid=floor, approximate=False)
        if client.xlen(key) > cap:
            removed += streams.cut_to_cap(client, key, groups, cap)
        if removed:
            trimmed[topic] = removed
    return trimmed


def lag_sample_record(now=None) -> int:
    """The minute's sample of every consumer group's lag; the groups it recorded (none
    when Redis does not answer)."""
    minute = (now or timezone.now()).replace(second=0, microsecond=0)
    sample = {f"{behind.topic}: {behind.consumer}": behind.behind for behind in lag.consumer_lag()}
    if not sample:
        return 0
    try:
        lag.record_sample(minute, sample)
    except REDIS_ERRORS:
        return 0
    return len(sample)
