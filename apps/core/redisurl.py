"""REDIS_URL ↔ the Redis connections Steward's own client, Django's cache and Celery make,
in one place.

REDIS_URL names one Redis server (`redis://`, `rediss://`, `unix://`), or a service that
Redis Sentinel watches over:

    redis+sentinel://[[user]:password@]host1:26379,host2:26379,host3:26379/service[/db]
        [?sentinel_password=…]

With Sentinel every client asks the Sentinels for the service's primary when it connects,
and again after the primary stops answering, so a failover needs no change of settings.
The password is the Redis servers' (`requirepass`); `sentinel_password` is the
Sentinels' own, when they have one.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

import redis
from redis.sentinel import Sentinel, SentinelConnectionPool

SENTINEL_SCHEME = "redis+sentinel"
SENTINEL_PORT = 26379


@dataclass(frozen=True)
class SentinelService:
    sentinels: tuple[tuple[str, int], ...]
    service: str
    db: int = 0
    username: str | None = None
    password: str | None = None
    sentinel_password: str | None = None


def _host_port(address: str) -> tuple[str, int]:
    host, colon, port = address.rpartition(":")
    if not colon or host.endswith(":"):  # no port, or a bare IPv6 address
        host, port = address, ""
    host = host.strip("[]")
    if not host or (port and not port.isdigit()):
        raise ValueError(f"REDIS_URL: {address!r} is not a Sentinel's host:port.")
    return host, int(port or SENTINEL_PORT)


def sentinel_service(url: str) -> SentinelService | None:
    """The Sentinel service a `redis+sentinel://` URL names; None for any other URL."""
    parts = urlsplit(url)
    if parts.scheme != SENTINEL_SCHEME:
        return None
    userinfo, _, hosts = parts.netloc.rpartition("@")
    username, _, password = userinfo.partition(":")
    path = [segment for segment in parts.path.split("/") if segment]
    if not hosts or not path or len(path) > 2 or (len(path) == 2 and not path[1].isdigit()):
        raise ValueError(
            "REDIS_URL: a Sentinel URL is "
            "redis+sentinel://[:password@]host:port[,host:port…]/service[/db]."
        )
    query = dict(parse_qsl(parts.query))
    return SentinelService(
        sentinels=tuple(_host_port(address) for address in hosts.split(",")),
        service=unquote(path[0]),
        db=int(path[1]) if len(path) == 2 else 0,
        username=unquote(username) or None,
        password=unquote(password) or None,
        sentinel_password=query.get("sentinel_password") or None,
    )


def connection_pool(url: str, **options) -> redis.ConnectionPool:
    """A redis-py connection pool for REDIS_URL, with `options` for each connection."""
    found = sentinel_service(url)
    if found is None:
        return redis.ConnectionPool.from_url(url, **options)
    asking = {k: v for k, v in options.items() if k.startswith("socket_")}
    if found.sentinel_password:
        asking["password"] = found.sentinel_password
    sentinels = Sentinel(found.sentinels, sentinel_kwargs=asking)
    return SentinelConnectionPool(
        found.service,
        sentinels,
        db=found.db,
        username=found.username,
        password=found.password,
        **options,
    )


class CachePool:
    """Django's RedisCache `pool_class`: its pools are made by `connection_pool`, so the
    cache follows a Sentinel service's primary as Steward's own client does."""

    from_url = staticmethod(connection_pool)


def cache_settings(url: str) -> dict:
    # A list, not the URL: Django splits a LOCATION string at commas into servers.
    return {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": [url],
        "OPTIONS": {"pool_class": "apps.core.redisurl.CachePool"},
    }


def celery_broker(url: str) -> tuple[str, dict]:
    """Celery's broker URL and the transport options it needs for REDIS_URL."""
    found = sentinel_service(url)
    if found is None:
        if url.startswith("unix://"):
            # redis-py names Unix sockets unix://?db=N, kombu redis+socket://?virtual_host=N:
            # kombu ignores `db`, and its workers would share database 0 with every
            # other stack on the server.
            path, _, query = url[len("unix://") :].partition("?")
            asked = [
                ("virtual_host" if key == "db" else key, value) for key, value in parse_qsl(query)
            ]
            return "redis+socket://" + path + (f"?{urlencode(asked)}" if asked else ""), {}
        return url, {}
    auth = ""
    if found.username or found.password:
        auth = f"{quote(found.username or '')}:{quote(found.password or '')}@"
    broker = ";".join(
        f"sentinel://{auth}{f'[{host}]' if ':' in host else host}:{port}/{found.db}"
        for host, port in found.sentinels
    )
    options: dict = {"master_name": found.service}
    if found.sentinel_password:
        options["sentinel_kwargs"] = {"password": found.sentinel_password}
    return broker, options
