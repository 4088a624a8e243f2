"""Eventing's part in schema news (apps.registry.news): a consumer's news subscription
gets its consumer group from the start of its stream (apps.eventing.signals), so news
the dispatcher published before the group existed is still delivered."""

import uuid

import pytest

from apps.core.context import SYSTEM_ACTOR
from apps.core.redis import get_redis
from apps.eventing import dispatcher
from apps.eventing.envelope import Envelope
from apps.eventing.transports import stream_key
from apps.registry import selectors, services
from apps.registry.models import Subscription
from apps.registry.news import PUBLISHED, news_topic
from tests.registry.factories import V1, V2_COMPATIBLE, sync

pytestmark = pytest.mark.django_db


@pytest.fixture
def names():
    uid = uuid.uuid4().hex[:8]
    made = {"topic": f"orders.d{uid}", "consumer": f"billing-{uid}", "uid": uid}
    yield made
    get_redis().delete(stream_key(made["topic"]), stream_key(news_topic(made["consumer"])))


def test_news_dispatched_before_its_subscriptions_group_was_made_is_still_delivered(
    names, django_capture_on_commit_callbacks
):
    # given: billing subscribed before news was addressed, so it has no news
    # subscription yet
    topic, billing = names["topic"], names["consumer"]
    sync(f"{names['uid']}-1", V1, name=topic, consumers=(billing,))
    Subscription.objects.create(
        consumer=services.service_ensure(actor=SYSTEM_ACTOR, name=billing),
        topic=selectors.topic_by_name(topic),
        transport=Subscription.Transport.REDIS_STREAM,
    )

    # when: the next news makes its news subscription in the same transaction, and the
    # dispatcher publishes the news before the after-commit step makes the group
    with django_capture_on_commit_callbacks() as after_commit:
        sync(f"{names['uid']}-2", V2_COMPATIBLE, name=topic, consumers=(billing,))
    dispatcher.drain()
    for callback in after_commit:
        callback()

    # then: billing's group, read as any stream consumer reads, has its news
    [mirror] = selectors.news_subscriptions(billing)
    stream = stream_key(news_topic(billing))
    [(_, entries)] = get_redis().xreadgroup(mirror.group_name, "b-1", {stream: ">"}, count=10)
    news = [Envelope.from_json(fields[b"envelope"]) for _, fields in entries]
    assert [(e.event_type, e.payload["version"], e.payload["addressee"]) for e in news] == [
        (PUBLISHED, 2, billing)
    ]
