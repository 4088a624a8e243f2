"""The suite runs in several pytest-xdist worker processes (`make test` starts one per
core); each worker is a test run of its own.

PostgreSQL needs nothing here: pytest-django gives each worker its own test database
(test_steward_gw0, ...). Redis does: streams, consumer groups, dispatcher marks and
throttle counters are shared names, so each worker gets a Redis database of its own,
emptied first. This plugin is loaded by `-p tests.workers` (pyproject's addopts), before
any conftest imports Django's settings, because the settings read REDIS_URL once; the
processes a test starts inherit the worker's URL from the environment.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import redis

from apps.core.redisurl import SENTINEL_SCHEME, connection_pool

# The devstack's test run uses Redis database 1 and `make bench` 2 (portal/devstack.py);
# the workers take the ones after.
FIRST_WORKER_DB = 3


def with_db(url: str, db: int) -> str:
    """`url` naming Redis database `db` instead: in the query for a Unix socket
    (unix://path?db=N), after the service for Sentinel (redis+sentinel://hosts/service/N),
    in the path otherwise (redis://host:port/N)."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        query = dict(parse_qsl(parts.query))
        query["db"] = str(db)
        # Not urlunsplit: with no host it would drop the "//" redis-py requires.
        return f"{url.partition('?')[0]}?{urlencode(query)}"
    service = [segment for segment in parts.path.split("/") if segment][:1]
    if parts.scheme == SENTINEL_SCHEME:
        return urlunsplit(parts._replace(path=f"/{service[0]}/{db}"))
    return urlunsplit(parts._replace(path=f"/{db}"))


def _own_redis() -> None:
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or not os.environ.get("REDIS_URL"):
        return
    url = with_db(os.environ["REDIS_URL"], FIRST_WORKER_DB + int(worker.removeprefix("gw")))
    os.environ["REDIS_URL"] = url
    redis.Redis(connection_pool=connection_pool(url)).flushdb()


_own_redis()
