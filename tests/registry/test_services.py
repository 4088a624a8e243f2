"""Writes of the topic catalog (apps.registry.services): each validated, audited, and
announced to eventing after commit."""

import pytest
from celery.contrib.testing.worker import start_worker
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.core.context import SYSTEM_ACTOR, Actor
from apps.core.errors import ValidationFailed
from apps.core.kick import clear_kick
from apps.core.redis import get_redis
from apps.core.scope import system_scope
from apps.eventing import tasks
from apps.eventing.services import KICK_KEY
from apps.eventing.signals import FOLLOW_KEY
from apps.eventing.transports import stream_key
from apps.registry import services
from apps.registry.models import Service, Subscription
from apps.registry.services import NotPermitted
from apps.registry.signals import subscription_created, topics_created
from apps.tenancy.models import AuditEvent
from portal.celery import app
from tests.factories import service_token
from tests.support import wait_for

pytestmark = pytest.mark.django_db


def audited(action):
    with system_scope():
        return list(AuditEvent.objects.filter(action=action).values_list("object_repr", flat=True))


def as_service(name) -> Actor:
    return Actor(service_account=service_token(name=name).token.service_account)


def test_a_service_is_created_once_and_audited_once():
    first = services.service_ensure(actor=SYSTEM_ACTOR, name="steward.audited", description="d")
    again = services.service_ensure(actor=SYSTEM_ACTOR, name="steward.audited")
    assert again.pk == first.pk and again.description == "d"  # dotted names are fine
    assert audited("service.create").count("steward.audited") == 1


def test_a_service_description_is_validated():
    with pytest.raises(ValidationError):
        services.service_ensure(actor=SYSTEM_ACTOR, name="wordy", description="x" * 256)
    assert not Service.objects.filter(name="wordy").exists()


def test_a_token_speaks_for_its_own_service_and_an_operator_names_one():
    orders = as_service("orders")
    assert services.service_for_caller(actor=orders).name == "orders"
    assert services.service_for_caller(actor=orders, named="orders").name == "orders"
    with pytest.raises(NotPermitted) as refused:
        services.service_for_caller(actor=orders, named="billing")
    assert refused.value.status == 403 and refused.value.code == "permission_denied"
    assert refused.value.detail == "This token speaks for orders, not billing."
    assert services.service_for_caller(actor=SYSTEM_ACTOR, named="billing").name == "billing"
    with pytest.raises(ValidationFailed) as unnamed:
        services.service_for_caller(actor=SYSTEM_ACTOR)
    assert unnamed.value.code == "service_required"


def test_only_a_producer_acts_as_one(topic):
    orders = services.service_ensure(actor=SYSTEM_ACTOR, name="orders")
    topic.producers.add(orders)
    services.require_produces(as_service("orders"), topic)
    services.require_produces(SYSTEM_ACTOR, topic)
    with pytest.raises(NotPermitted) as refused:
        services.require_produces(as_service("billing"), topic)
    assert refused.value.detail == f"billing does not produce {topic.name}."


def test_a_subscription_is_ensured_once_and_audited_once(topic):
    reader = services.service_ensure(actor=SYSTEM_ACTOR, name="reader")
    first = services.subscription_ensure(actor=SYSTEM_ACTOR, consumer=reader, topic=topic)
    again = services.subscription_ensure(actor=SYSTEM_ACTOR, consumer=reader, topic=topic)
    assert again.pk == first.pk and first.transport == Subscription.Transport.REDIS_STREAM
    assert audited("subscription.create") == [str(first)]


def test_a_webhook_subscription_needs_an_endpoint_and_a_secret_reference(topic):
    reader = services.service_ensure(actor=SYSTEM_ACTOR, name="reader")
    with pytest.raises(ValidationFailed) as refused:
        services.subscription_create(
            actor=SYSTEM_ACTOR,
            consumer=reader,
            topic=topic,
            transport=Subscription.Transport.WEBHOOK,
            endpoint="https://reader.example/hook",
        )
    assert refused.value.code == "webhook_incomplete"
    assert not Subscription.objects.exists()


def test_creating_a_topic_announces_it_after_commit(django_capture_on_commit_callbacks):
    heard = []

    def listen(sender, names, **kwargs):
        heard.append((sender, names))

    topics_created.connect(listen)
    try:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            services.topic_create(actor=SYSTEM_ACTOR, name="test.announced")
        assert heard == []  # nothing before commit
        for callback in callbacks:
            callback()
    finally:
        topics_created.disconnect(listen)
    assert len(heard) == 1 and heard[0][0].__name__ == "Topic"
    assert heard[0][1] == ["test.announced"]


def _followed_on_a_worker(topic) -> None:
    """Steward's catch-all consumer subscribed to the topic by a real worker, and its
    consumer group made."""
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        wait_for(
            lambda: Subscription.objects.filter(
                topic=topic, consumer__name="steward.recent-events"
            ).exists()
        )
    subscription = Subscription.objects.get(topic=topic, consumer__name="steward.recent-events")
    groups = get_redis().xinfo_groups(stream_key(topic.name))
    assert subscription.group_name.encode() in [g["name"] for g in groups]


@pytest.mark.django_db(transaction=True)
def test_stewards_consumers_follow_a_topic_once_it_is_committed(
    django_capture_on_commit_callbacks, settings
):
    """Through a task a real worker runs, sent by the dispatcher's run the commit kicked:
    the request that made the topic waits neither for the subscription nor for a task
    of its own to be published."""
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "KICK_ON_COMMIT": True}
    clear_kick(KICK_KEY)  # an earlier test's kick, left with no worker to run it
    try:
        with django_capture_on_commit_callbacks(execute=True):
            topic = services.topic_create(actor=SYSTEM_ACTOR, name="test.followed")
        assert not Subscription.objects.filter(topic=topic).exists()  # not in the request
        # what the commit left for the dispatcher: the name, and the kick
        assert get_redis().sismember(FOLLOW_KEY, "test.followed")
        assert get_redis().exists(KICK_KEY)
        _followed_on_a_worker(topic)
        assert not get_redis().sismember(FOLLOW_KEY, "test.followed")
    finally:
        get_redis().delete(stream_key("test.followed"))
        get_redis().srem(FOLLOW_KEY, "test.followed")


@pytest.mark.django_db(transaction=True)
def test_without_a_kick_the_dispatchers_sweep_has_a_new_topic_followed(
    django_capture_on_commit_callbacks,
):
    # given: commits that kick no dispatcher (the test settings), so only beat's sweep runs
    try:
        with django_capture_on_commit_callbacks(execute=True):
            topic = services.topic_create(actor=SYSTEM_ACTOR, name="test.swept")
        assert get_redis().sismember(FOLLOW_KEY, "test.swept")
        # when: the sweep runs
        tasks.periodic_sweep_outbox.apply()
        # then: it handed the name over, and a worker follows the topic
        assert not get_redis().sismember(FOLLOW_KEY, "test.swept")
        _followed_on_a_worker(topic)
    finally:
        get_redis().delete(stream_key("test.swept"))
        get_redis().srem(FOLLOW_KEY, "test.swept")


def test_following_a_new_topic_costs_the_same_however_many_topics_exist(
    django_capture_on_commit_callbacks,
):
    created = []

    def follow_one_more() -> int:
        name = f"test.grow{len(created)}"
        created.append(name)
        with CaptureQueriesContext(connection) as ctx:
            with django_capture_on_commit_callbacks(execute=True):
                services.topic_create(actor=SYSTEM_ACTOR, name=name)
        return len(ctx.captured_queries)

    try:
        follow_one_more()  # the first also makes Steward's consumer services
        first = follow_one_more()
        for _ in range(15):
            follow_one_more()
        assert follow_one_more() == first
    finally:
        get_redis().delete(*[stream_key(name) for name in created])


def test_a_new_subscription_is_announced_after_commit(topic, django_capture_on_commit_callbacks):
    heard = []

    def listen(sender, subscription, **kwargs):
        heard.append(subscription)

    subscription_created.connect(listen)
    try:
        with django_capture_on_commit_callbacks(execute=True):
            created = services.subscription_create(
                actor=SYSTEM_ACTOR,
                consumer=services.service_ensure(actor=SYSTEM_ACTOR, name="search"),
                topic=topic,
                transport=Subscription.Transport.REDIS_STREAM,
            )
    finally:
        subscription_created.disconnect(listen)
    assert heard == [created]
    assert audited("subscription.create") == [str(created)]


def test_delivery_health_is_kept_without_audit_rows(topic):
    reader = services.service_ensure(actor=SYSTEM_ACTOR, name="reader")
    subscription = services.subscription_ensure(actor=SYSTEM_ACTOR, consumer=reader, topic=topic)
    services.subscription_mark_failed(subscription_id=subscription.pk, error="x" * 600)
    services.subscription_mark_failed(subscription_id=subscription.pk, error="HTTP 500")
    subscription.refresh_from_db()
    assert (subscription.consecutive_failures, subscription.last_error) == (2, "HTTP 500")
    services.subscription_mark_delivered(subscription_id=subscription.pk)
    subscription.refresh_from_db()
    assert subscription.consecutive_failures == 0 and subscription.last_error == ""
    assert subscription.last_delivered_at is not None
    assert audited("subscription.update") == []
