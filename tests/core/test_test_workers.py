"""The suite's workers each use a Redis database of their own (tests/workers.py)."""

import os

import pytest
from django.conf import settings

from apps.core.redisurl import sentinel_service
from tests.workers import FIRST_WORKER_DB, with_db


def test_every_form_of_redis_url_is_given_the_worker_database():
    assert with_db("unix:///srv/redis.sock?db=1", 4) == "unix:///srv/redis.sock?db=4"
    assert with_db("redis://:pw@cache:6380/1", 4) == "redis://:pw@cache:6380/4"
    assert with_db("redis://cache:6380", 3) == "redis://cache:6380/3"
    sentinel = with_db("redis+sentinel://s1:26379,s2:26379/steward/1?sentinel_password=x", 5)
    found = sentinel_service(sentinel)
    assert (found.service, found.db, found.sentinel_password) == ("steward", 5, "x")


def test_a_worker_runs_against_its_own_redis_database():
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        pytest.skip("the suite runs in one process (-n 0): no worker database to check")
    own = with_db(settings.REDIS_URL, FIRST_WORKER_DB + int(worker.removeprefix("gw")))
    assert settings.REDIS_URL == own == os.environ["REDIS_URL"]
