"""The engines operators run in front of and beside Steward, started for real: Debian's
PgBouncer in transaction mode in front of the test database, and Redis with three
Sentinels. A machine without them stops the run with one sentence (portal.debian_packages).
How each is started lives in bench/cluster_stack.py, which the cluster drill shares."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

import pytest
from django.db import connection

from bench.chaos_stack import postgres_bin
from bench.cluster_stack import (
    PgBouncer,
    PostgresPair,
    SentinelSet,
    stop,
    world_readable_dir,
)
from portal.debian_packages import ensure_binary
from portal.devstack import StackError
from portal.settings import prepare_threshold
from tests.eventing.conftest import topic  # noqa: F401 - the eventing paths' fixture
from tests.support import free_port, wait_for


def _needed(binary: str, package: str, needed_for: str) -> str:
    try:
        return ensure_binary(binary, package=package, needed_for=needed_for)
    except StackError as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session")
def pgbouncer(django_db_setup, django_db_blocker):
    """Debian's PgBouncer in transaction mode in front of the test database, with fewer
    server connections (3) than the tests' clients, so clients share them."""
    binary = _needed("/usr/sbin/pgbouncer", "pgbouncer", "the connection pooler's tests")
    db = connection.settings_dict
    socket_owner = Path(db["HOST"]).stat().st_uid if db["HOST"].startswith("/") else 0
    bouncer = PgBouncer(
        world_readable_dir("steward-pgbouncer-"),
        "127.0.0.1",
        free_port(),
        db["USER"],
        settings={"default_pool_size": 3},
    )
    bouncer.start(
        binary, f"host={db['HOST']} port={db['PORT'] or 5432}", pwd.getpwuid(socket_owner).pw_name
    )
    wait_for(bouncer.answers, timeout=20)
    yield bouncer
    stop({"pgbouncer": bouncer.process})


@pytest.fixture
def through_pgbouncer(pgbouncer, transactional_db):
    """Every connection the test's threads open goes through PgBouncer, with the settings
    STEWARD_DB_POOLER=transaction gives (no prepared statements)."""
    db = connection.settings_dict
    saved = db["HOST"], db["PORT"], db["OPTIONS"]
    connection.close()
    db["HOST"], db["PORT"] = "127.0.0.1", str(pgbouncer.port)
    db["OPTIONS"] = {**saved[2], "prepare_threshold": prepare_threshold("off")}
    try:
        yield pgbouncer
    finally:
        connection.close()
        db["HOST"], db["PORT"], db["OPTIONS"] = saved


@pytest.fixture
def sentinel_redis():
    """Debian's redis-server as a primary and its replica, and three redis-sentinel
    processes watching them (quorum 2, a primary down after 1 s), each on its own port."""
    server = _needed("redis-server", "redis-server", "the Redis Sentinel tests")
    sentinel = _needed("redis-sentinel", "redis-sentinel", "the Redis Sentinel tests")
    here = world_readable_dir("steward-sentinel-")
    password = "sentinel-test-secret"  # noqa: S105 - a throwaway server's
    names = ["primary", "replica", "sentinel0", "sentinel1", "sentinel2"]
    found = SentinelSet(here, password, {name: free_port() for name in names}, {})
    found.start(server, sentinel)
    try:
        wait_for(found.answering)
        wait_for(found.ready, timeout=60)
        yield found
    finally:
        stop(found.processes)


@pytest.fixture
def postgres_pair(transactional_db):
    """Steward's test database on a primary of its own and a streaming standby of it,
    both copied with pg_basebackup (the rows committed so far included)."""
    db = connection.settings_dict
    if not db["HOST"].startswith("/"):
        pytest.fail("The failover test copies the embedded PostgreSQL; unset DATABASE_URL.")
    here = world_readable_dir("steward-pg-pair-")
    owner = pwd.getpwuid(Path(db["HOST"]).stat().st_uid).pw_name
    os.chown(here, Path(db["HOST"]).stat().st_uid, -1)
    pair = PostgresPair(
        postgres_bin()[0],  # the programs the embedded server runs on
        here,
        owner,
        {"primary": free_port(), "standby": free_port()},
        {},
    )
    try:
        pair.base_backup("primary", "-h", db["HOST"])
        pair.start("primary")
        wait_for(lambda: pair.answers("primary"), timeout=60)
        pair.standby_of_primary()
        wait_for(lambda: pair.answers("standby"), timeout=60)
        yield pair
    finally:
        stop(pair.processes)
