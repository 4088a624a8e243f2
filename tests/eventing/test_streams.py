"""Streams are trimmed to what every consumer group has acknowledged, within a hard cap."""

import logging

import pytest

from apps.core.outbox import NewEvent, emit_many
from apps.core.redis import get_redis
from apps.core.scope import tenant_scope
from apps.eventing import dispatcher
from apps.eventing.streams import trim_streams
from tests.eventing.conftest import recent_events_runner, subscribe

pytestmark = pytest.mark.django_db


def publish(tenant, topic, n):
    with tenant_scope(tenant):
        emit_many(
            [
                NewEvent(
                    topic=topic.name,
                    event_type="e",
                    aggregate_type="k",
                    aggregate_id=str(i),
                    payload={},
                    tenant=tenant,
                )
                for i in range(n)
            ]
        )
    dispatcher.drain()


def test_nothing_a_slow_group_has_not_read_is_trimmed(tenant_a, topic):
    runner = recent_events_runner(topic)
    subscribe(topic, "slow-service")  # reads nothing
    publish(tenant_a, topic, 10)
    client = get_redis()
    while runner.read_once(client):
        pass
    assert topic.name not in trim_streams()  # other topics' streams may be trimmed
    assert client.xlen(f"steward:stream:{topic.name}") == 10


def test_what_every_group_acknowledged_is_trimmed(tenant_a, topic):
    runner = recent_events_runner(topic)
    publish(tenant_a, topic, 10)
    client = get_redis()
    while runner.read_once(client):
        pass
    assert trim_streams()[topic.name] == 9  # the last delivered entry stays as the floor
    assert client.xlen(f"steward:stream:{topic.name}") == 1


def test_over_the_cap_the_lagging_group_is_named(tenant_a, topic, settings, caplog):
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "STREAM_MAXLEN": 4}
    subscribe(topic, "stuck-service")
    publish(tenant_a, topic, 10)
    with caplog.at_level(logging.ERROR, logger="apps.eventing.streams"):
        assert trim_streams()[topic.name] == 6
    assert "stuck-service" in caplog.text
    assert get_redis().xlen(f"steward:stream:{topic.name}") == 4


def test_stewards_consumers_follow_a_stream_from_its_first_entry(tenant_a, topic):
    """Subscribing Steward's consumers to a new topic is an after-commit step that a
    Redis restart (or a slower refresh elsewhere) can leave undone; the dispatcher makes
    their groups before it adds the topic's first entry, so none starts after it."""
    client = get_redis()
    assert not client.exists(f"steward:stream:{topic.name}")
    publish(tenant_a, topic, 3)
    read = client.xreadgroup(
        "steward.recent-events", "probe", {f"steward:stream:{topic.name}": ">"}, count=10
    )
    assert [len(entries) for _, entries in read] == [3]
