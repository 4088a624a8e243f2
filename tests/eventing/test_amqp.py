"""RabbitMQ as the outbox's transport, against a real rabbitmq-server node of the tests'
own (portal.rabbitmq): the same envelope and port as Redis streams, confirms before the
outbox lets a row go, order per aggregate, the inbox's dedup, dead letters, restarts
and crashes of the node, webhook subscriptions; and RabbitMQ as Celery's broker."""

import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from django.utils import timezone
from kombu import Consumer, Queue
from prometheus_client import REGISTRY

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
from apps.eventing.consumer_registry import HANDLERS, Handler
from apps.eventing.consumers import build_runners
from apps.eventing.envelope import Envelope
from apps.eventing.inbox import handle_envelopes
from apps.eventing.models import (
    DeadLetter,
    DeliveryCount,
    DispatchLane,
    InboxEntry,
    OutboxEvent,
)
from apps.eventing.services import sync_consumer_subscriptions
from apps.eventing.transports import outbox_transport, webhook_signature
from portal.rabbitmq import SCRIPTS, RabbitNode, free_port
from tests.eventing.factories import SECRET, stream_envelopes, subscribe, webhook, write_events
from tests.support import ROOT, LocalServer, database_url

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

    def __init__(self, topic, *, fail: bool = False, pause: float = 0.0, declare: bool = True):
        self.applied: list[Envelope] = []
        self.fail, self.pause = fail, pause
        self.handler = Handler(f"test.amqp.{uuid.uuid4().hex[:8]}", (topic.name,), self.apply)
        self.subscription = subscribe(topic, self.handler.consumer)
        self.topic = topic
        if declare:  # its queues exist before the first event, as in set-up
            self.declare()

    def declare(self) -> None:
        with connect() as conn:
            declare_subscription(conn.channel(), self.handler.consumer, [self.topic.name])

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


@pytest.mark.parametrize("declared_by", ["subscription", "dispatcher"])
def test_what_was_confirmed_into_a_new_queue_survives_a_sigkill_right_after(
    amqp, tenant_a, topic, monkeypatch, declared_by
):
    # given: a consumer whose lane queues are new: declared as its subscription is made,
    # or by the dispatcher before the topic's first message. (RabbitMQ 3.10 saves a new
    # quorum queue's registration lazily, by a 500 ms auto-save; killed before that, the
    # queue came back without a leader and kept what it had confirmed; docs/eventing.md.)
    recorder = Recorder(topic, declare=False)
    written = write_events(tenant_a, topic, 5)  # waiting in the outbox meanwhile
    if declared_by == "subscription":
        recorder.declare()
    else:
        monkeypatch.setitem(HANDLERS, recorder.handler.consumer, recorder.handler)
    # when: the broker confirms them at once, and its node is SIGKILLed right after and
    # started again
    assert dispatcher.drain() == 5
    assert outbox_size() == 0  # the outbox let them go: the broker holds them alone
    amqp.kill()
    amqp.start()
    # then: the queues elect their leaders, and every confirmed event is delivered
    with running(recorder.runner()):
        wait_until(lambda: len(recorder.applied) == 5, timeout=120, message="all delivered")
        # and every queue bound to the topic (Steward's own consumers' too, made in the
        # same moment) takes new events: a queue without a leader would nack them
        later = write_events(tenant_a, topic, 1, aggregate="later")
        wait_until(publish_what_waits, timeout=60, message="the topic's queues take events")
        wait_until(lambda: len(recorder.applied) == 6, timeout=60, message="the new one too")
    assert [e.event_id for e in recorder.applied] == [e.event_id for e in [*written, *later]]
    assert recorder.ready_messages() == 0


@pytest.mark.parametrize("stop", ["stop", "kill"], ids=["clean", "SIGKILL"])
def test_a_broker_restart_mid_stream_loses_nothing(amqp, tenant_a, topic, stop):
    # given: a consumer working through a backlog the broker confirmed
    recorder = Recorder(topic, pause=0.02)
    first = [
        *write_events(tenant_a, topic, 20, aggregate="a"),
        *write_events(tenant_a, topic, 20, aggregate="b"),
    ]
    with running(recorder.runner()):
        assert dispatcher.drain() == 40
        wait_until(lambda: len(recorder.applied) >= 5)
        # when: the broker goes (cleanly, or SIGKILLed: nothing flushed but its logs)
        # while messages wait in it, more are written, and it starts again on its data
        getattr(amqp, stop)()
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
    assert recorder.ready_messages() == 0


class CountedWaits(threading.Event):
    """A runner's stop event that answers its back-off waits at once and keeps their
    lengths, then stops the runner after `limit` of them (time is not under test)."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit
        self.waits: list[float] = []

    def wait(self, timeout=None):
        if timeout is not None:
            self.waits.append(timeout)
            if len(self.waits) >= self.limit:
                self.set()
        return self.is_set()


def test_a_runner_that_cannot_reach_the_broker_backs_off_and_says_so(amqp, topic):
    # given: a runner whose broker does not answer (nothing listens on its port)
    recorder = Recorder(topic)
    runner = recorder.runner()
    runner.url = f"amqp://steward:p4ssw0rd@127.0.0.1:{free_port()}//"
    runner.stop = CountedWaits(limit=6)
    # when
    runner.run_forever()
    # then: it tried again after growing pauses, capped
    assert runner.stop.waits == [0.5, 1.0, 2.0, 4.0, 8.0, 15.0]
    # and each loss shows on the subscription and in the failures' count (/metrics)
    with system_scope():
        recorder.subscription.refresh_from_db()
        failed = DeliveryCount.objects.filter(subscription=recorder.subscription)
        assert sum(c.failed for c in failed) == 6
    assert recorder.subscription.consecutive_failures == 6
    assert recorder.subscription.last_error.startswith("AMQP: lost the broker")
    assert "p4ssw0rd" not in recorder.subscription.last_error


def test_a_runner_reconnects_after_the_broker_crashed_and_delivers_again(amqp, tenant_a, topic):
    # given: a runner consuming
    recorder = Recorder(topic)
    write_events(tenant_a, topic, 1)
    with running(recorder.runner()):
        assert dispatcher.drain() == 1
        wait_until(lambda: len(recorder.applied) == 1)
        # when: the broker is SIGKILLed under it and comes back
        amqp.kill()
        wait_until(lambda: failures(recorder) >= 1, message="the loss recorded")
        amqp.start()
        later = write_events(tenant_a, topic, 3, aggregate="later")
        wait_until(publish_what_waits, timeout=120, message="the outbox drains again")
        # then: the same runner carries on, and its subscription is healthy again
        wait_until(lambda: len(recorder.applied) == 4, timeout=120)
    assert [e.event_id for e in recorder.applied[1:]] == [e.event_id for e in later]
    assert failures(recorder) == 0  # a delivery clears the failures in a row
    assert recorder.subscription.last_error == ""


def failures(recorder) -> int:
    with system_scope():
        recorder.subscription.refresh_from_db()
    return recorder.subscription.consecutive_failures


@pytest.mark.usefixtures("webhook_secret")
def test_a_webhook_subscription_is_delivered_through_rabbitmq(amqp, tenant_a, topic):
    # given: a receiver that refuses the first attempt at the second event, and a
    # webhook subscription made as the API makes it (its queues declared on creation)
    attempts: Counter = Counter()

    def answer(received):
        event_id = received.headers["webhook-id"]
        attempts[event_id] += 1
        return (
            503 if event_id == str(written[1].event_id) and attempts[event_id] == 1 else 200
        ), {}

    with LocalServer(respond=answer) as receiver:
        hook = webhook(topic, receiver.url + "/events")
        written = write_events(tenant_a, topic, 3)
        # published before any runner reads the subscription: its queues keep them
        assert dispatcher.drain() == 3
        # when: the runner run_consumers builds for it under the AMQP transport
        [runner] = [r for r in build_runners() if r.group == hook.group_name]
        assert isinstance(runner, AmqpRunner)
        with running(runner):
            wait_until(lambda: len(receiver.received) == 4, message="three events, one twice")
            wait_until(lambda: delivered(hook) == 3, message="the deliveries counted")
    # then: each event posted, signed, in order, the refused one again
    ids = [r.headers["webhook-id"] for r in receiver.received]
    assert ids == [
        str(written[0].event_id),
        *[str(written[1].event_id)] * 2,
        str(written[2].event_id),
    ]
    for received in receiver.received:
        assert received.path == "/events"
        signature = webhook_signature(
            SECRET.encode(),
            received.headers["webhook-id"],
            int(received.headers["webhook-timestamp"]),
            received.body,
        )
        assert signature in received.headers["webhook-signature"].split()
        assert Envelope.from_json(received.body).event_id == uuid.UUID(
            received.headers["webhook-id"]
        )
    with system_scope():
        assert not DeadLetter.objects.filter(subscription=hook).exists()


def delivered(subscription) -> int:
    with system_scope():
        return sum(c.delivered for c in DeliveryCount.objects.filter(subscription=subscription))


def test_events_of_a_deleted_tenant_are_dropped_and_do_not_block_the_lane(
    amqp, tenant_a, topic, caplog
):
    # given: an event of a tenant that no longer exists, ahead of others in its lane
    recorder = Recorder(topic)
    later = write_events(tenant_a, topic, 2)
    orphan = dataclasses.replace(later[0], event_id=uuid.uuid4(), tenant_id=uuid.uuid4())
    AmqpTransport().publish([orphan])
    assert dispatcher.drain() == 2
    runner = recorder.runner()
    # when
    with running(runner):
        wait_until(lambda: len(recorder.applied) == 2)
        wait_until(lambda: recorder.ready_messages() == 0)
    # then: acknowledged and counted, not applied, not dead-lettered
    assert [e.event_id for e in recorder.applied] == [e.event_id for e in later]
    assert runner.dropped == 1
    # in the consumers process's metrics too (the log alone was all an operator had)
    dropped = REGISTRY.get_sample_value(
        "steward_consumer_events_dropped_total",
        {"group": recorder.handler.consumer, "reason": "tenant_deleted"},
    )
    assert dropped == 1
    assert "no longer exists" in caplog.text
    assert inbox_rows(recorder.handler.consumer) == 2
    assert dead_letters(recorder) == []


def test_celery_runs_its_tasks_through_rabbitmq_when_it_is_the_broker(rabbit, tenant_a, topic):
    # given: events waiting in the outbox, and a worker whose broker is the node
    write_events(tenant_a, topic, 3)
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "STEWARD_CELERY_BROKER_URL": rabbit.url,
        "STEWARD_LOG_LEVEL": "WARNING",
    }
    celery = str(Path(sys.executable).parent / "celery")
    worker = subprocess.Popen(  # noqa: S603
        [celery, "-A", "portal", "worker", "--pool", "solo", "--queues", "default"]
        + ["--without-gossip", "--without-mingle", "--loglevel", "WARNING"],
        cwd=ROOT,
        env=env,
    )
    try:
        # when: another process sends the dispatcher's task, as a commit's kick does
        subprocess.run(  # noqa: S603
            [sys.executable, "manage.py", "shell", "-c", SEND_DISPATCH],
            cwd=ROOT,
            env=env,
            check=True,
            timeout=120,
        )
        # then: the worker took it from RabbitMQ and ran it
        wait_until(lambda: outbox_size() == 0, timeout=120, message="the task ran")
    finally:
        worker.terminate()
        worker.wait(timeout=60)
    assert len(stream_envelopes(topic)) == 3
    with connect(rabbit.url) as conn:
        # Celery's queue is RabbitMQ's (a broker left at Redis would have none there)
        assert Queue("default")(conn.channel()).queue_declare(passive=True).message_count == 0


SEND_DISPATCH = "from apps.core.enqueue import send_task; send_task('eventing.dispatch_outbox')"


def test_a_task_rabbitmq_refuses_fails_its_sender_instead_of_vanishing(rabbit):
    # given: Celery's queue made to refuse every message by a policy (RabbitMQ then nacks
    # the publish; Celery sends through the default exchange, so no other queue can be
    # bound beside it)
    env = {**os.environ, "DATABASE_URL": database_url(), "STEWARD_CELERY_BROKER_URL": rabbit.url}
    refuse = {"max-length": 0, "overflow": "reject-publish"}
    ctl = [str(SCRIPTS / "rabbitmqctl"), "-n", rabbit.name]
    policy = ["set_policy", "--apply-to", "queues", "refuse", "^default$", json.dumps(refuse)]
    subprocess.run(ctl + policy, env=rabbit.env(), check=True, capture_output=True, timeout=120)  # noqa: S603

    def send():
        return subprocess.run(  # noqa: S603
            [sys.executable, "manage.py", "shell", "-c", SEND_DISPATCH],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    try:
        # when: a process sends a task
        refused = send()
    finally:
        subprocess.run(  # noqa: S603
            ctl + ["clear_policy", "refuse"], env=rabbit.env(), check=True, capture_output=True
        )
    # then: the sender is told (publisher confirms), rather than the task being lost silently
    assert refused.returncode != 0
    assert "MessageNacked" in refused.stderr
    # and once the queue takes messages, the same send succeeds
    taken = send()
    assert taken.returncode == 0, taken.stderr
    with connect(rabbit.url) as conn:
        default = Queue("default")(conn.channel())
        assert default.queue_declare(passive=True).message_count == 1
        default.purge()
