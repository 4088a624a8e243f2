"""RabbitMQ as the outbox's transport, against a real rabbitmq-server node of the tests'
own (portal.rabbitmq): the same envelope and port as Redis streams, confirms before the
outbox lets a row go, order per aggregate, the inbox's dedup, dead letters."""

import contextlib
import threading
import time
import uuid

import pytest
from django.utils import timezone
from kombu import Consumer, Queue

from apps.core.scope import system_scope
from apps.eventing import dispatcher
from apps.eventing.amqp import (
    DEAD_LETTERS,
    AmqpRunner,
    AmqpTransport,
    DeadLetterRunner,
    amqp_consumer_runner,
    connect,
    declare_subscription,
    lane_count,
    lane_queue_name,
    topic_exchange,
)
from apps.eventing.consumer_registry import Handler
from apps.eventing.consumers import build_runners
from apps.eventing.envelope import Envelope
from apps.eventing.inbox import handle_envelopes
from apps.eventing.models import DeadLetter, DispatchLane, InboxEntry, OutboxEvent
from apps.eventing.services import sync_consumer_subscriptions
from apps.eventing.transports import outbox_transport
from portal.rabbitmq import RabbitNode, free_port
from tests.eventing.factories import subscribe, webhook, write_events

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="session")
def rabbit(tmp_path_factory):
    node = RabbitNode(tmp_path_factory.mktemp("rabbitmq"))
    node.start()
    yield node
    node.stop()


@pytest.fixture
def amqp(settings, rabbit):
    settings.STEWARD_EVENTING = {
        **settings.STEWARD_EVENTING,
        "TRANSPORT": "amqp",
        "AMQP_URL": rabbit.url,
        "BACKOFF_BASE_SECONDS": 0.01,
        "BACKOFF_MAX_SECONDS": 0.05,
        "MAX_ATTEMPTS": 3,  # part of the queues' arguments: the same in every test
    }
    AmqpTransport.reset()
    yield rabbit
    AmqpTransport.reset()


class Recorder:
    """A Steward consumer of the test's own: records what its handler applied."""

    def __init__(self, topic, *, fail: bool = False, pause: float = 0.0):
        self.applied: list[Envelope] = []
        self.fail, self.pause = fail, pause
        self.handler = Handler(f"test.amqp.{uuid.uuid4().hex[:8]}", (topic.name,), self.apply)
        self.subscription = subscribe(topic, self.handler.consumer)
        with connect() as conn:  # its queues exist before the first event, as in set-up
            declare_subscription(conn.channel(), self.handler.consumer, [topic.name])

    def apply(self, envelope: Envelope) -> None:
        if self.fail:
            raise RuntimeError("the handler refuses this event")
        time.sleep(self.pause)  # the handler's work, so the broker still holds a backlog
        self.applied.append(envelope)

    def runner(self):
        return amqp_consumer_runner(self.handler, [self.subscription])

    def delivered_at(self):
        with system_scope():
            self.subscription.refresh_from_db()
        return self.subscription.last_delivered_at

    def ready_messages(self) -> int:
        with connect() as conn:
            channel = conn.channel()
            return sum(
                Queue(lane_queue_name(self.handler.consumer, lane))(channel)
                .queue_declare(passive=True)
                .message_count
                for lane in range(lane_count())
            )


@contextlib.contextmanager
def running(*runners):
    threads = [threading.Thread(target=r.run_forever, daemon=True) for r in runners]
    for thread in threads:
        thread.start()
    try:
        yield
    finally:
        for runner in runners:
            runner.stop.set()
        for thread in threads:
            thread.join(timeout=30)


def wait_until(condition, timeout: float = 60.0, message: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting: {message or condition}")
        time.sleep(0.05)


def outbox_size() -> int:
    with system_scope():
        return OutboxEvent.objects.count()


def lanes_due_now() -> None:
    """Forget the back-off of lanes that failed (time is not what these tests are about)."""
    DispatchLane.objects.update(next_attempt_at=timezone.now(), failures=0)


def publish_what_waits() -> bool:
    lanes_due_now()
    dispatcher.drain()
    return outbox_size() == 0


def inbox_rows(consumer: str) -> int:
    with system_scope():
        return InboxEntry.objects.filter(consumer=consumer).count()


def test_the_setting_chooses_rabbitmq_behind_the_same_port(amqp):
    assert isinstance(outbox_transport(), AmqpTransport)


@pytest.mark.usefixtures("webhook_secret")
def test_the_consumers_process_runs_rabbitmq_runners_under_the_amqp_transport(amqp, topic):
    # given: Steward's own consumer and a webhook subscription on the topic
    sync_consumer_subscriptions(topic_names=[topic.name])
    hook = webhook(topic, "http://127.0.0.1:9/hook")
    # when
    runners = build_runners()
    # then: each reads its lane queues, and one runner turns dead-lettered messages
    # into Steward's dead letters
    groups = {runner.group: runner for runner in runners}
    assert isinstance(groups["steward.recent-events"], AmqpRunner)
    assert groups[hook.group_name].streams == [
        lane_queue_name(hook.group_name, lane) for lane in range(lane_count())
    ]
    assert isinstance(groups[DEAD_LETTERS], DeadLetterRunner)


def test_an_event_goes_from_the_outbox_to_a_consumer_through_rabbitmq(amqp, tenant_a, topic):
    # given
    recorder = Recorder(topic)
    written = write_events(tenant_a, topic, 5)
    # when
    published = dispatcher.drain()
    with running(recorder.runner()):
        wait_until(lambda: len(recorder.applied) == 5)
    # then
    assert published == 5
    assert outbox_size() == 0
    assert [e.event_id for e in recorder.applied] == [e.event_id for e in written]
    assert recorder.applied[0] == written[0]  # the same envelope, field for field
    assert inbox_rows(recorder.handler.consumer) == 5
    assert recorder.ready_messages() == 0


def test_a_row_stays_in_the_outbox_when_the_broker_nacks(amqp, tenant_a, topic):
    # given: a queue on the topic that refuses every message (RabbitMQ then nacks it)
    recorder = Recorder(topic)
    with connect() as conn:
        channel = conn.channel()
        blocker = Queue(
            f"test.blocker.{uuid.uuid4().hex[:8]}",
            durable=True,
            queue_arguments={"x-max-length": 0, "x-overflow": "reject-publish"},
        )(channel)
        blocker.declare()
        exchange = topic_exchange(topic.name)(channel)
        for lane in range(lane_count()):
            blocker.bind_to(exchange=exchange, routing_key=str(lane))
    write_events(tenant_a, topic, 1)
    # when
    assert dispatcher.drain() == 0
    # then
    assert outbox_size() == 1
    assert "MessageNacked" in DispatchLane.objects.exclude(last_error="").get().last_error
    # and once the broker takes it, it goes
    with connect() as conn:
        blocker(conn.channel()).delete()
    lanes_due_now()
    assert dispatcher.drain() == 1
    assert outbox_size() == 0
    # The nacked publish reached the consumer's queue too (a nack means "not every
    # queue took it"); sent again, it is there twice, and the inbox applies it once.
    assert recorder.ready_messages() == 2
    with running(recorder.runner()):
        wait_until(lambda: recorder.ready_messages() == 0 and recorder.delivered_at())
    assert len(recorder.applied) == 1
    assert inbox_rows(recorder.handler.consumer) == 1


def test_a_row_stays_in_the_outbox_while_the_broker_is_unreachable(amqp, settings, tenant_a, topic):
    settings.STEWARD_EVENTING = {
        **settings.STEWARD_EVENTING,
        "AMQP_URL": f"amqp://guest:guest@127.0.0.1:{free_port()}//",
    }
    write_events(tenant_a, topic, 2)
    assert dispatcher.drain() == 0
    assert outbox_size() == 2
    lane = DispatchLane.objects.exclude(last_error="").get()
    assert lane.failures == 1 and "AMQP" in lane.last_error
    assert "guest" not in lane.last_error  # the URL's credentials are never written down


def test_each_aggregate_keeps_its_order_under_concurrent_consumers(amqp, tenant_a, topic):
    # given: two runners of one consumer, as two run_consumers processes, and six
    # aggregates whose events are written interleaved
    recorder = Recorder(topic)
    written: dict[str, list] = {}
    for _ in range(4):
        for aggregate in range(6):
            events = write_events(tenant_a, topic, 5, aggregate=f"agg-{aggregate}")
            written.setdefault(f"agg-{aggregate}", []).extend(e.event_id for e in events)
    total = 4 * 6 * 5
    # when
    with running(recorder.runner(), recorder.runner()):
        assert dispatcher.drain() == total
        wait_until(lambda: len(recorder.applied) == total)
    # then: every event once, and each aggregate's in the order they were written
    applied = [e.event_id for e in recorder.applied]
    assert len(set(applied)) == total
    for aggregate, ids in written.items():
        assert [i for i in applied if i in set(ids)] == ids, aggregate


def test_a_message_redelivered_after_its_consumer_died_is_not_applied_twice(amqp, tenant_a, topic):
    # given: a consumer that applied the event but died before acknowledging it
    recorder = Recorder(topic)
    write_events(tenant_a, topic, 1)
    assert dispatcher.drain() == 1
    with connect() as conn:
        received = receive_one(conn, recorder)
        assert recorder.ready_messages() == 0  # it is ours, unacknowledged
        handle_envelopes(recorder.handler, [Envelope.from_json(received.body)])
    # the connection closed without an ack: the broker delivers the message again
    assert len(recorder.applied) == 1
    # when
    with running(recorder.runner()):
        # delivered (so acknowledged right after) without running the handler again
        wait_until(lambda: recorder.delivered_at() is not None)
    # then
    assert len(recorder.applied) == 1
    assert inbox_rows(recorder.handler.consumer) == 1
    assert recorder.ready_messages() == 0  # acknowledged, not returned on close


def test_a_message_the_consumer_rejects_becomes_a_steward_dead_letter(amqp, tenant_a, topic):
    # given
    recorder = Recorder(topic, fail=True)
    [envelope] = write_events(tenant_a, topic, 1)
    assert dispatcher.drain() == 1
    # when
    with running(recorder.runner(), DeadLetterRunner()):
        wait_until(lambda: dead_letters(recorder))
    # then
    [dead] = dead_letters(recorder)
    assert dead.event_id == envelope.event_id
    assert dead.envelope == envelope.to_dict()
    assert "rejected after its retries" in dead.error
    assert "the handler refuses this event" in dead.error
    assert recorder.applied == []
    assert recorder.ready_messages() == 0


def receive_one(conn, recorder):
    """One message of the recorder's lane queues, taken and left unacknowledged."""
    channel = conn.channel()
    queues = [
        Queue(lane_queue_name(recorder.handler.consumer, lane))(channel)
        for lane in range(lane_count())
    ]
    received = []
    with Consumer(channel, queues, on_message=received.append, auto_declare=False):
        while not received:
            with contextlib.suppress(TimeoutError):
                conn.drain_events(timeout=1)
    return received[0]


def test_a_message_whose_consumer_keeps_dying_becomes_a_steward_dead_letter(amqp, tenant_a, topic):
    # given: a message that every consumer takes and dies on, never acknowledging it
    recorder = Recorder(topic)
    [envelope] = write_events(tenant_a, topic, 1)
    assert dispatcher.drain() == 1
    deliveries = 0
    with running(DeadLetterRunner()):
        while not dead_letters(recorder):
            assert deliveries <= 3 + 1, "the broker kept delivering past its limit"
            with connect() as conn:
                receive_one(conn, recorder)
                deliveries += 1
            # the connection closed: the broker returns it, or dead-letters it at the limit
            wait_until(lambda: recorder.ready_messages() or dead_letters(recorder))
    # then
    [dead] = dead_letters(recorder)
    assert deliveries >= 3  # MAX_ATTEMPTS: the broker's x-delivery-limit
    assert dead.event_id == envelope.event_id
    assert "delivered 3 times without being acknowledged" in dead.error
    assert recorder.ready_messages() == 0


def dead_letters(recorder):
    with system_scope():
        return list(DeadLetter.objects.filter(subscription=recorder.subscription))


def test_a_broker_restart_mid_stream_loses_nothing(amqp, tenant_a, topic):
    # given: a consumer working through a backlog
    recorder = Recorder(topic, pause=0.02)
    first = [
        *write_events(tenant_a, topic, 20, aggregate="a"),
        *write_events(tenant_a, topic, 20, aggregate="b"),
    ]
    with running(recorder.runner()):
        assert dispatcher.drain() == 40
        wait_until(lambda: len(recorder.applied) >= 5)
        # when: the broker restarts while messages wait in it and more are written
        amqp.stop()
        second = write_events(tenant_a, topic, 10, aggregate="a")
        assert dispatcher.drain() == 0  # unreachable: the rows stay
        assert outbox_size() == 10
        amqp.start()
        # A restarted node refuses (nacks) until its quorum queues have their leaders
        # again: the dispatcher keeps trying, as its sweep would, until the broker takes
        # the rows.
        wait_until(publish_what_waits, timeout=120, message="the outbox drains again")
        wait_until(lambda: len({e.event_id for e in recorder.applied}) == 50, timeout=120)
    # then: each once (the inbox absorbs what the crash returned), in order per aggregate
    assert inbox_rows(recorder.handler.consumer) == 50
    assert {e.event_id for e in recorder.applied} == {e.event_id for e in [*first, *second]}
    applied_ids = [e.event_id for e in recorder.applied]
    assert len(applied_ids) == 50
    for aggregate in ("a", "b"):
        written = [e.event_id for e in [*first, *second] if e.aggregate_id == aggregate]
        assert [i for i in applied_ids if i in set(written)] == written
