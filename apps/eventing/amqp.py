"""RabbitMQ (AMQP 0-9-1) as the outbox's transport: the same envelope, the same port.

Chosen with `STEWARD_EVENT_TRANSPORT=amqp` and `STEWARD_AMQP_URL`. The topology:

- one durable direct exchange per topic, `steward.topic.<topic>`;
- per subscription (consumer), `STEWARD_AMQP_LANES` quorum queues
  `<group>.lane-<k>`, each bound to the exchange of every topic the subscription
  reads with the routing key `<k>`. The dispatcher publishes an envelope with the
  routing key `lane % STEWARD_AMQP_LANES`, where `lane` is its outbox lane (a hash of
  the aggregate), so one aggregate's events always go to the same lane queue;
- every lane queue has a single active consumer (`x-single-active-consumer`): of the
  runners of several `run_consumers` processes, the broker delivers a lane to one
  at a time and hands it to another when that one goes, so a lane is read in order;
- a message the consumer rejects after its retry budget, or that the broker
  delivered `STEWARD_DELIVERY_MAX_ATTEMPTS` times without an acknowledgement
  (`x-delivery-limit`), is dead-lettered (at least once) to `steward.dead-letters`,
  which the dead-letter runner turns into Steward's dead letters.

The dispatcher releases an outbox row only once the broker confirmed the message
(publisher confirms): a nack or a lost connection is a TransportError, and the rows
stay in the outbox for the next try.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from amqp.exceptions import MessageNacked
from django.conf import settings
from django.db import close_old_connections, connection
from kombu import Connection, Consumer, Exchange, Queue
from kombu.exceptions import OperationalError as KombuOperationalError

from apps.eventing import delivery_metrics, services
from apps.eventing.consumer_registry import HANDLERS, Handler
from apps.eventing.consumers import (
    Entry,
    tenants_gone,
    unreadable_envelope,
    webhook_delivery,
)
from apps.eventing.envelope import Envelope
from apps.eventing.inbox import handle_envelopes
from apps.eventing.transports import TransportError
from apps.registry import selectors as registry_selectors
from apps.registry.models import Subscription

logger = logging.getLogger(__name__)

DEAD_LETTERS = "steward.dead-letters"
LANE_SUFFIX = ".lane-"
# A runner that lost the broker (a restart, a crash, a queue whose leader is not elected
# yet) connects again after 0.5 s, 1 s, 2 s, ... at most 15 s apart.
RECONNECT_BASE_SECONDS = 0.5
RECONNECT_MAX_SECONDS = 15.0


def topic_exchange(topic: str) -> Exchange:
    return Exchange(f"steward.topic.{topic}", type="direct", durable=True)


def lane_count() -> int:
    return settings.STEWARD_EVENTING["AMQP_LANES"]


def lane_queue_name(group: str, lane: int) -> str:
    return f"{group}{LANE_SUFFIX}{lane}"


def lane_queue_arguments() -> dict:
    return {
        "x-queue-type": "quorum",
        "x-single-active-consumer": True,
        # A consumer that dies on a message again and again must not block its lane.
        "x-delivery-limit": settings.STEWARD_EVENTING["MAX_ATTEMPTS"],
        "x-dead-letter-exchange": DEAD_LETTERS,
        # At-least-once dead-lettering needs reject-publish overflow (RabbitMQ's
        # quorum queue documentation); no length limit is set, so nothing is refused.
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",
    }


def queue_settle_seconds() -> float:
    return settings.STEWARD_EVENTING["AMQP_QUEUE_SETTLE_SECONDS"]


def dead_letters_queue(channel) -> Queue:
    """The exchange every lane queue dead-letters to, and the queue that keeps them."""
    exchange = Exchange(DEAD_LETTERS, type="fanout", durable=True)
    return Queue(
        DEAD_LETTERS, exchange=exchange, durable=True, queue_arguments={"x-queue-type": "quorum"}
    )(channel)


def declare_dead_letters(channel) -> Queue:
    return declare_groups(channel, {})[DEAD_LETTERS][0]


def declare_subscription(channel, group: str, topics: Sequence[str]) -> list[Queue]:
    """The group's lane queues, bound to each topic's exchange (idempotent)."""
    return declare_groups(channel, {group: topics})[group]


def declare_groups(channel, topics_of: Mapping[str, Iterable[str]]) -> dict[str, list[Queue]]:
    """The dead-letter queue and each group's lane queues, bound to the exchanges of the
    group's topics (idempotent): every queue declared first, bound only once it has
    settled (`STEWARD_AMQP_QUEUE_SETTLE_SECONDS`).

    Why the wait. RabbitMQ 3.10's Ra (2.2) writes a new quorum queue's server into its
    name registry (a DETS file, names.dets) lazily, by the table's auto-save (500 ms),
    not at each change. A node killed before then comes back with the queue's record but without
    the registration: it starts a new, empty Ra server for the queue, which never
    elects a leader, and what was confirmed into the queue stays in the orphaned
    server's log (rabbitmq/ra#443 syncs the file since; rabbitmq/rabbitmq-server#15725
    describes the same stuck queue). A binding is the only way Steward's messages
    reach a queue (the dispatcher publishes to the topics' exchanges; the broker
    dead-letters to the fanout exchange), so binding after the settle means nothing
    is ever confirmed into a queue whose registration could still be lost. No client
    can see when the file is written, hence a wait rather than a condition; it is one
    wait per call, which happens when a runner connects, when a dispatcher first
    publishes a topic, and when a subscription is made."""
    dead_letters = dead_letters_queue(channel)
    dead_letters.queue_declare()
    queues: dict[str, list[Queue]] = {DEAD_LETTERS: [dead_letters]}
    for group in topics_of:
        queues[group] = []
        for lane in range(lane_count()):
            queue = Queue(
                lane_queue_name(group, lane), durable=True, queue_arguments=lane_queue_arguments()
            )(channel)
            queue.queue_declare()
            queues[group].append(queue)
    time.sleep(queue_settle_seconds())
    dead_letters.declare()  # its exchange, and the binding
    for group, topics in topics_of.items():
        for topic in sorted(set(topics)):
            exchange = topic_exchange(topic)(channel)
            exchange.declare()
            for lane, queue in enumerate(queues[group]):
                queue.bind_to(exchange=exchange, routing_key=str(lane))
    return queues


def declare_subscriptions(subscriptions: Sequence[Subscription]) -> None:
    """The lane queues of these subscriptions, bound to their topics (made if missing):
    under the AMQP transport what a stream's consumer group is, made when the
    subscription is (apps.eventing.services.ensure_subscription_groups), so the events
    published before its runner starts wait in its queues. A broker away now is logged;
    `run_consumers` declares them again at its next refresh and when the runner starts."""
    topics_of: dict[str, set[str]] = {}
    for subscription in subscriptions:
        topics_of.setdefault(subscription.group_name, set()).add(subscription.topic.name)
    if not topics_of:
        return
    conn = connect()
    try:
        declare_groups(conn.channel(), topics_of)
    except _broker_errors(conn) as exc:
        logger.warning("AMQP: could not declare the queues of %s (%s)", sorted(topics_of), exc)
    finally:
        conn.release()


def connect(url: str | None = None) -> Connection:
    url = url or settings.STEWARD_EVENTING["AMQP_URL"]
    return Connection(url, transport_options={"confirm_publish": True}, connect_timeout=5)


def _broker_errors(conn: Connection) -> tuple[type[BaseException], ...]:
    return (
        *conn.connection_errors,
        *conn.channel_errors,
        MessageNacked,
        KombuOperationalError,
        OSError,
    )


class AmqpTransport:
    """Publish envelopes to their topics' exchanges and wait for the broker's confirms.

    The publish signature is the port's, shared with RedisStreamTransport; `expected`,
    `through` and `groups` are the Redis re-drive's marks, which a broker that confirms
    each message after writing it to its quorum queues does not need.
    """

    name = "amqp"
    # One connection per process (publishing is serialised on it), and the topics whose
    # exchange and Steward consumers' queues it has declared: made before a topic's
    # first message, so no Steward consumer's queue starts after it.
    _lock = threading.Lock()
    _connection: Connection | None = None
    _declared: set[str] = set()

    def __init__(self, url: str | None = None):
        self.url = url

    def publish(
        self,
        envelopes: Sequence[Envelope],
        *,
        lane: int | None = None,
        expected: int = 0,
        through: int = 0,
        groups: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Publish each envelope, persistent, and return once the broker confirmed all."""
        with self._lock:
            conn = self._open()
            try:
                channel = conn.default_channel
                self._declare_topics(channel, {envelope.topic for envelope in envelopes})
                producer = conn.Producer(channel=channel)
                for envelope in envelopes:
                    own_lane = (
                        lane
                        if lane is not None
                        else services.lane_of(envelope.aggregate_type, envelope.aggregate_id)
                    )
                    producer.publish(
                        envelope.to_json(),
                        exchange=topic_exchange(envelope.topic),
                        routing_key=str(own_lane % lane_count()),
                        content_type="application/json",
                        content_encoding="utf-8",
                        message_id=str(envelope.event_id),
                        type=envelope.event_type,
                        delivery_mode=2,
                        retry=False,
                    )
            except _broker_errors(conn) as exc:
                self.reset()
                raise TransportError(f"AMQP: {type(exc).__name__}: {exc}") from exc

    def _open(self) -> Connection:
        cls = type(self)
        if cls._connection is None:
            cls._connection = connect(self.url)
        try:
            cls._connection.ensure_connection(max_retries=1, interval_start=0)
        except _broker_errors(cls._connection) as exc:
            self.reset()
            raise TransportError(f"AMQP: broker unreachable ({type(exc).__name__})") from exc
        return cls._connection

    def _declare_topics(self, channel, topics: set[str]) -> None:
        new = topics - self._declared
        if not new:
            return
        topics_of: dict[str, set[str]] = {}
        for topic in sorted(new):
            topic_exchange(topic)(channel).declare()
            for handler in HANDLERS.values():
                if handler.topics is None or topic in handler.topics:
                    topics_of.setdefault(handler.consumer, set()).add(topic)
        declare_groups(channel, topics_of)  # one settle for all of them
        self._declared.update(new)  # the class's set, which reset() replaces

    @classmethod
    def reset(cls) -> None:
        """Drop the connection and what was declared through it: a broker that lost its
        state (a new node) needs the declarations again."""
        conn, cls._connection = cls._connection, None
        cls._declared = set()
        if conn is not None:
            try:
                conn.release()
            except Exception:  # noqa: BLE001 - it is already broken
                logger.debug("AMQP connection closed uncleanly", exc_info=True)


# --------------------------------------------------------------------------- consuming


@dataclass
class AmqpRunner:
    """Reads one subscription group's lane queues and delivers each envelope in order.

    Shaped as apps.eventing.consumers.Runner, so `run_consumers` runs either. A failure
    is retried in place with back-off, keeping the lane's later messages waiting; after
    MAX_ATTEMPTS the message is rejected and the broker dead-letters it.
    """

    subscriptions: list[Subscription]
    deliver: Callable[[list[Envelope]], None]
    url: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    dropped: int = 0  # events of deleted tenants, acknowledged without delivery
    draining: bool = False  # consuming on a live connection (consume_reconnecting)

    def __post_init__(self):
        self.group = self.subscriptions[0].group_name
        self.by_topic = {s.topic.name: s for s in self.subscriptions}
        self.streams = [lane_queue_name(self.group, lane) for lane in range(lane_count())]
        self.config = settings.STEWARD_EVENTING

    def run_forever(self) -> None:
        consume_reconnecting(self, self._consume, on_loss=self.record_broker_loss)

    def record_broker_loss(self, error: str) -> None:
        """A lost connection is a failed delivery of each of the runner's subscriptions:
        it shows as their last error, failures in a row, and in
        `steward_delivery_failures_last_hour`."""
        for subscription in self.subscriptions:
            services.subscription_record_failure(subscription=subscription, error=error)
            services.count_deliveries(subscription_id=subscription.pk, failed=1)

    def _consume(self, conn: Connection) -> None:
        channel = conn.channel()
        queues = declare_subscription(channel, self.group, sorted(self.by_topic))
        # on_message: the raw message, decoded here, so an unreadable one is dead-lettered.
        consumer = Consumer(channel, queues=queues, on_message=self.on_message)
        # One unacknowledged message per lane queue (the limit is per basic.consume):
        # the next waits in the broker until this one is settled, so what a dying
        # runner leaves behind is one message per lane, returned ahead of the rest.
        consumer.qos(prefetch_count=1)
        with consumer:
            drain_until_stopped(self, conn)

    def on_message(self, message) -> None:
        try:
            envelope = Envelope.from_json(message.body)
        except Exception:  # noqa: BLE001 - dead-lettered, where the operator sees it
            message.reject(requeue=False)
            return
        if tenants_gone([envelope]):
            self.drop(message, envelope)
            return
        subscription = self.by_topic.get(envelope.topic) or self.subscriptions[0]
        # Quorum queues count earlier deliveries of this message in x-delivery-count.
        attempt = int((message.headers or {}).get("x-delivery-count", 0)) + 1
        while True:
            try:
                self.deliver([envelope])
            except Exception as exc:  # noqa: BLE001
                error = f"{type(exc).__name__}: {exc}"
                services.subscription_record_failure(subscription=subscription, error=error)
                if attempt >= self.config["MAX_ATTEMPTS"] or self.stop.is_set():
                    # Stopping: requeued for the next runner, which counts on from here.
                    message.reject(requeue=self.stop.is_set())
                    return
                delay = services.backoff_seconds(
                    attempt,
                    base=self.config["BACKOFF_BASE_SECONDS"],
                    cap=self.config["BACKOFF_MAX_SECONDS"],
                )
                attempt += 1
                self.stop.wait(delay)
            else:
                services.subscription_record_delivery(subscription=subscription, delivered=1)
                message.ack()
                return
            finally:
                close_old_connections()

    def drop(self, message, envelope: Envelope) -> None:
        """Acknowledge, with a warning, an event of a tenant deleted since it was sent, as
        the stream runners do: nothing can record it (its inbox or dead-letter row would
        name a tenant that is gone), and requeued it would hold its lane for good."""
        logger.warning(
            "%s: dropped event %s (%s): its tenant %s no longer exists",
            self.group,
            envelope.event_id,
            envelope.event_type,
            envelope.tenant_id,
        )
        message.ack()
        self.dropped += 1
        delivery_metrics.count_dropped(self.group, "tenant_deleted")


@dataclass
class DeadLetterRunner:
    """Turns what the broker dead-lettered into Steward's dead letters, through the same
    service as the stream runners (so the console, the API and replay see them)."""

    url: str | None = None
    stop: threading.Event = field(default_factory=threading.Event)
    group: str = DEAD_LETTERS
    streams: list[str] = field(default_factory=lambda: [DEAD_LETTERS])
    subscriptions: list[Subscription] = field(default_factory=list)
    draining: bool = False

    def run_forever(self) -> None:
        consume_reconnecting(self, self._consume)

    def _consume(self, conn: Connection) -> None:
        channel = conn.channel()
        queue = declare_dead_letters(channel)
        with Consumer(channel, queues=[queue], on_message=self.on_message):
            drain_until_stopped(self, conn)

    def on_message(self, message) -> None:
        death = ((message.headers or {}).get("x-death") or [{}])[0]
        queue = str(death.get("queue", ""))
        group = queue.rpartition(LANE_SUFFIX)[0] or queue
        reason = str(death.get("reason", ""))
        try:
            envelope = Envelope.from_json(message.body)
        except Exception as exc:  # noqa: BLE001 - kept for an operator, named by its queue
            envelope = unreadable_envelope(
                Entry(stream=queue, entry_id=str(message.delivery_tag), envelope=None)
            )
            error = f"unreadable message: {exc}"
        else:
            error = ""
        if tenants_gone([envelope]):
            logger.warning("dead letter %s of a deleted tenant; dropped", envelope.event_id)
            message.ack()
            delivery_metrics.count_dropped(group, "tenant_deleted")
            return
        subscription = subscription_of_group(group, envelope.topic)
        if subscription is None:
            logger.error("dead letter of %s on %s: no such subscription; dropped", group, queue)
            message.ack()
            delivery_metrics.count_dropped(group, "no_subscription")
            return
        if reason == "delivery_limit":
            error = error or f"delivered {max_attempts()} times without being acknowledged"
        else:
            error = error or f"rejected after its retries: {subscription.last_error}"
        services.dead_letter_record(
            subscription=subscription, envelope=envelope, error=error, attempts=max_attempts()
        )
        message.ack()
        close_old_connections()


def consume_reconnecting(runner, consume: Callable[[Connection], None], on_loss=None) -> None:
    """`consume(conn)` on a connection to the broker until the runner stops; when the
    connection (or the consuming) fails, connect again with back-off, telling `on_loss`
    why. A node restarting, or one whose quorum queues have no leader yet (they refuse
    the consume until one is elected), is waited out this way."""
    losses = 0
    try:
        while not runner.stop.is_set():
            runner.draining = False
            try:
                with connect(runner.url) as conn:
                    conn.ensure_connection(max_retries=1, interval_start=0)
                    consume(conn)
            except Exception as exc:  # noqa: BLE001 - a runner thread must survive anything
                # A loss after consuming again starts the back-off anew.
                losses = 1 if runner.draining else losses + 1
                delay = services.backoff_seconds(
                    losses, base=RECONNECT_BASE_SECONDS, cap=RECONNECT_MAX_SECONDS
                )
                # The exception's class and text, never the URL (its password).
                error = f"AMQP: lost the broker ({type(exc).__name__}: {exc})"
                logger.warning("%s: %s; reconnecting in %.1f s", runner.group, error, delay)
                delivery_metrics.count_runner_error(runner.group, "broker_lost")
                if on_loss is not None:
                    try:
                        on_loss(error[:500])
                    except Exception:  # noqa: BLE001 - PostgreSQL may be away too
                        logger.warning("%s: could not record the loss", runner.group)
                runner.stop.wait(delay)
            finally:
                close_old_connections()
    finally:
        connection.close()  # this thread's own connection


def drain_until_stopped(runner, conn: Connection) -> None:
    """Deliver what the broker sends until the runner stops; a lost connection raises."""
    runner.draining = True
    while not runner.stop.is_set():
        try:
            conn.drain_events(timeout=1.0)
        except TimeoutError:
            continue


def max_attempts() -> int:
    return settings.STEWARD_EVENTING["MAX_ATTEMPTS"]


def subscription_of_group(group: str, topic: str) -> Subscription | None:
    for subscription in registry_selectors.active_subscriptions():
        if subscription.group_name == group and subscription.topic.name == topic:
            return subscription
    return None


def build_amqp_runners() -> list:
    """The runners of `run_consumers` under the AMQP transport: one per Steward consumer
    and webhook subscription, as with streams, and the dead-letter runner."""
    runners: list = []
    internal = registry_selectors.active_subscriptions(Subscription.Transport.REDIS_STREAM)
    for handler in HANDLERS.values():
        mine = [s for s in internal if s.consumer.name == handler.consumer]
        if mine:
            runners.append(amqp_consumer_runner(handler, mine))
    for subscription in registry_selectors.active_subscriptions(Subscription.Transport.WEBHOOK):
        deliver = webhook_delivery(subscription)
        runners.append(AmqpRunner(subscriptions=[subscription], deliver=deliver))
    runners.append(DeadLetterRunner())
    return runners


def amqp_consumer_runner(handler: Handler, subscriptions: list[Subscription], **kwargs):
    return AmqpRunner(
        subscriptions=subscriptions,
        deliver=lambda envelopes: handle_envelopes(handler, envelopes),
        **kwargs,
    )
