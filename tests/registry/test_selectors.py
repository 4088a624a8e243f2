"""Reads of the catalog (apps.registry.selectors)."""

import pytest

from apps.registry.selectors import resolve_topic

pytestmark = pytest.mark.django_db


def test_topics_resolve_from_the_database_when_redis_is_away(topic, settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        }
    }
    assert resolve_topic(topic.name).name == topic.name
    assert resolve_topic("no.such") is None
