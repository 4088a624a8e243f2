"""One Redis connection pool per process for Steward's own use (streams, kicks).

Django's cache and Celery keep their own connections; this one is for code that
talks to Redis directly. Short timeouts: a Redis outage must surface as an error
the caller handles, never as a hung request or worker.
"""

from __future__ import annotations

import functools

import redis
from django.conf import settings

from apps.core.redisurl import connection_pool


@functools.cache
def _pool(url: str) -> redis.ConnectionPool:
    # A Sentinel URL gives a pool that asks the Sentinels for the primary on connecting
    # (apps.core.redisurl), so after a failover the next connection finds the new one.
    return connection_pool(
        url, socket_timeout=5, socket_connect_timeout=2, health_check_interval=30
    )


@functools.cache
def _client(url: str) -> redis.Redis:
    return redis.Redis(connection_pool=_pool(url))


def get_redis() -> redis.Redis:
    # One client per URL: building one costs more than the command a kick sends.
    return _client(settings.REDIS_URL)


@functools.cache
def _script(url: str, source: str):
    return _client(url).register_script(source)


def script(source: str):
    """A Lua script on Steward's client, callable as `script(source)(keys=..., args=...)`:
    made once per process (hashing its source each call would be work on hot paths),
    sent by its SHA and loaded again by redis-py if Redis has forgotten it."""
    return _script(settings.REDIS_URL, source)


REDIS_ERRORS = (redis.RedisError, OSError)
