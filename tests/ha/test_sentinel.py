"""REDIS_URL naming a service behind Redis Sentinel (apps.core.redisurl): Steward's own
client, the cache and Celery's broker find the primary through the Sentinels, Lua scripts
and multi-key reads work there, and after the primary is killed and a Sentinel promotes
the replica, the same client carries on against the new primary."""

import os
import subprocess
import sys
import uuid
from urllib.parse import urlsplit

import pytest
import redis
from django.conf import settings
from django.core.cache import caches
from kombu import Connection

from apps.core.redis import REDIS_ERRORS, get_redis, script
from apps.core.redisurl import SentinelService, cache_settings, celery_broker, sentinel_service
from tests.support import wait_for

# Sets the key and answers both keys' values: a script and a multi-key read in one.
SET_AND_READ = "redis.call('SET', KEYS[1], ARGV[1]) return redis.call('MGET', KEYS[1], KEYS[2])"


def test_a_sentinel_url_names_the_sentinels_the_service_the_database_and_the_passwords():
    url = "redis+sentinel://:pa%40ss@h1:26379,h2,[::1]:26380/mymaster/2?sentinel_password=sp"
    assert sentinel_service(url) == SentinelService(
        sentinels=(("h1", 26379), ("h2", 26379), ("::1", 26380)),
        service="mymaster",
        db=2,
        password="pa@ss",
        sentinel_password="sp",
    )
    assert sentinel_service("redis://127.0.0.1:6379/0") is None
    assert celery_broker(url) == (
        "sentinel://:pa%40ss@h1:26379/2;sentinel://:pa%40ss@h2:26379/2;"
        "sentinel://:pa%40ss@[::1]:26380/2",
        {"master_name": "mymaster", "sentinel_kwargs": {"password": "sp"}},
    )
    assert celery_broker("unix:///run/redis.sock?db=3") == (
        "redis+socket:///run/redis.sock?virtual_host=3",
        {},
    )
    assert celery_broker("unix:///run/redis.sock") == ("redis+socket:///run/redis.sock", {})


def test_celery_on_a_unix_socket_uses_the_database_redis_url_names():
    """kombu reads a socket's database from virtual_host, not db: Celery must land in
    REDIS_URL's database, not database 0 beside every other stack's queues."""
    if not settings.REDIS_URL.startswith("unix://"):
        pytest.skip("REDIS_URL names a TCP server: no Unix socket to check")
    sock = urlsplit(settings.REDIS_URL).path
    url = f"unix://{sock}?db=7"
    queue = f"probe-{uuid.uuid4().hex[:8]}"
    with Connection(celery_broker(url)[0]) as connection:
        connection.SimpleQueue(queue).put({"probe": 1})
    try:
        assert redis.Redis(unix_socket_path=sock, db=7).llen(queue) == 1
        assert redis.Redis(unix_socket_path=sock, db=0).llen(queue) == 0
    finally:
        redis.Redis(unix_socket_path=sock, db=7).delete(queue)


def _start_up_error(url: str) -> str:
    """The last line a process starting with REDIS_URL=`url` printed, if it stopped."""
    code = "import django; django.setup()"
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "portal.settings", "REDIS_URL": url}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)  # noqa: S603
    return done.stderr.strip().splitlines()[-1] if done.returncode else ""


@pytest.mark.parametrize(
    "url",
    [
        "redis+sentinel://h1:26379",  # no service
        "redis+sentinel:///mymaster/0",  # no Sentinel
        "redis+sentinel://h1:port/mymaster",
        "redis+sentinel://h1/mymaster/zero",
        "redis+sentinel://h1/mymaster/0/extra",
    ],
)
def test_a_malformed_sentinel_url_stops_the_process_with_the_url_s_shape(url):
    with pytest.raises(ValueError, match="REDIS_URL"):
        sentinel_service(url)
    assert _start_up_error(url).startswith("django.core.exceptions.ImproperlyConfigured: REDIS_URL")


@pytest.fixture
def on_sentinels(sentinel_redis, settings):
    """Steward's settings for REDIS_URL naming the Sentinels' service."""
    settings.REDIS_URL = sentinel_redis.url
    settings.CACHES = {"default": {**cache_settings(sentinel_redis.url), "KEY_PREFIX": "ha"}}
    return sentinel_redis


def test_scripts_multi_key_reads_streams_the_cache_and_the_broker_work_on_the_primary(
    on_sentinels,
):
    client = get_redis()
    assert script(SET_AND_READ)(keys=["ha:a", "ha:b"], args=["1"]) == [b"1", None]
    client.mset({"ha:b": "2", "ha:c": "3"})
    assert client.mget(["ha:a", "ha:b", "ha:c"]) == [b"1", b"2", b"3"]
    client.xgroup_create("ha:stream", "readers", id="0", mkstream=True)
    client.xadd("ha:stream", {"envelope": "{}"})
    [[_, [(_, fields)]]] = client.xreadgroup("readers", "r1", {"ha:stream": ">"}, count=1)
    assert fields == {b"envelope": b"{}"}
    caches["default"].set("cached", "yes")
    assert caches["default"].get("cached") == "yes"
    # All of it on the primary the Sentinels name.
    primary = on_sentinels.server("primary")
    assert primary.get("ha:a") == b"1" and primary.exists("ha:stream") == 1
    assert primary.exists("ha:1:cached") == 1  # the cache's key: prefix, version, key

    broker, options = celery_broker(on_sentinels.url)
    with Connection(broker, transport_options=options) as connection:
        queue = connection.SimpleQueue("ha-broker")
        queue.put({"sent": "through the Sentinels"})
        message = queue.get(timeout=10)
        message.ack()
        queue.close()
    assert message.payload == {"sent": "through the Sentinels"}


def test_after_the_primary_is_killed_the_client_carries_on_against_the_promoted_replica(
    on_sentinels,
):
    client = get_redis()
    script(SET_AND_READ)(keys=["ha:before", "ha:after"], args=["kept"])
    assert client.wait(1, 10_000) == 1  # the replica has it
    replica_port = on_sentinels.ports["replica"]

    on_sentinels.kill("primary")

    def writes_on_the_new_primary() -> bool:
        try:
            client.set("ha:after", "written")
        except REDIS_ERRORS:
            return False
        return True

    wait_for(writes_on_the_new_primary, timeout=60)
    assert on_sentinels.primary_port() == replica_port
    assert on_sentinels.server("replica").get("ha:after") == b"written"
    assert script(SET_AND_READ)(keys=["ha:again", "ha:before"], args=["1"]) == [b"1", b"kept"]
    assert client.mget(["ha:before", "ha:after"]) == [b"kept", b"written"]
    caches["default"].set("after-failover", "yes")
    assert caches["default"].get("after-failover") == "yes"


def test_make_run_and_make_test_see_a_sentinel_redis_as_up(sentinel_redis):
    """The stack's readiness probe reads REDIS_URL as Steward does, Sentinels included."""
    from portal.devstack import _redis_ping

    assert _redis_ping(sentinel_redis.url)
    unknown = sentinel_redis.url.replace(f"/{sentinel_redis.service}/", "/no-such-service/")
    assert not _redis_ping(unknown)
