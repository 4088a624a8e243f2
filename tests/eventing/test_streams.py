"""Streams are trimmed to what every consumer group has acknowledged, within a hard cap."""

import logging

import pytest

from apps.core.redis import get_redis
from apps.eventing.services import streams_trim
from tests.eventing.factories import publish, recent_events_runner, subscribe

pytestmark = pytest.mark.django_db


def test_nothing_a_slow_group_has_not_read_is_trimmed(tenant_a, topic):
    runner = recent_events_runner(topic)
    subscribe(topic, "slow-service")  # reads nothing
    publish(tenant_a, topic, 10)
    client = get_redis()
    while runner.read_once(client):
        pass
    assert topic.name not in streams_trim()  # other topics' streams may be trimmed
    assert client.xlen(f"steward:stream:{topic.name}") == 10


def test_what_every_group_acknowledged_is_trimmed(tenant_a, topic):
    runner = recent_events_runner(topic)
    publish(tenant_a, topic, 10)
    client = get_redis()
    while runner.read_once(client):
        pass
    assert streams_trim()[topic.name] == 9  # the last delivered entry stays as the floor
    assert client.xlen(f"steward:stream:{topic.name}") == 1


def test_over_the_cap_the_lagging_group_is_named(tenant_a, topic, settings, caplog):
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "STREAM_MAXLEN": 4}
    subscribe(topic, "stuck-service")
    publish(tenant_a, topic, 10)
    with caplog.at_level(logging.ERROR, logger="apps.eventing.streams"):
        assert streams_trim()[topic.name] == 6
    assert "stuck-service" in caplog.text
    assert get_redis().xlen(f"steward:stream:{topic.name}") == 4
