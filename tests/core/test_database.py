"""The health check of persistent connections asks PostgreSQL only when it must, and
timestamps are read by psycopg's C loader."""

import datetime
import random

import psycopg
import pytest
from django.db import DataError, connection
from django.db.backends.postgresql.psycopg_any import BaseTzLoader
from psycopg.postgres import types
from psycopg.pq import Format

from portal.postgresql.base import UTCTimestamptzLoader, quietly_idle
from tests.support import wait_for

pytestmark = pytest.mark.django_db
TIMESTAMPTZ_OID = types["timestamptz"].oid


@pytest.fixture
def own_connection():
    """A Django connection of its own, outside the test's transaction, as a web worker has."""
    conn = connection.copy()
    conn.settings_dict["CONN_HEALTH_CHECKS"] = True
    conn.ensure_connection()
    yield conn
    conn.close()


def terminate(backend_pid: int) -> None:
    with psycopg.connect(**connection.get_connection_params(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [backend_pid])


def start_request(conn, checks: list) -> None:
    """What Django does when a request starts, with the `SELECT 1` check recorded."""
    conn.close_if_unusable_or_obsolete()
    real = type(conn).is_usable
    conn.is_usable = lambda: checks.append("SELECT 1") or real(conn)


def test_a_healthy_idle_connection_is_checked_without_a_query(own_connection):
    # given
    checks: list = []
    start_request(own_connection, checks)
    pid = own_connection.connection.info.backend_pid
    # when
    with own_connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        # then
        assert cursor.fetchone()[0] == pid
    assert checks == []


def test_a_connection_the_server_closed_is_replaced_before_the_request_uses_it(own_connection):
    # given
    checks: list = []
    old_pid = own_connection.connection.info.backend_pid
    terminate(old_pid)
    wait_for(lambda: not quietly_idle(own_connection.connection), timeout=5)
    start_request(own_connection, checks)
    # when
    with own_connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        # then: no error, a new connection
        assert cursor.fetchone()[0] != old_pid
    assert checks == ["SELECT 1"]


def test_a_connection_in_a_transaction_is_not_quietly_idle(own_connection):
    raw = own_connection.connection
    assert quietly_idle(raw)
    with raw.transaction():
        raw.execute("SELECT 1")
        assert not quietly_idle(raw)
    assert quietly_idle(raw)


def test_the_pool_checks_a_healthy_connection_by_its_socket_and_refuses_a_closed_one(monkeypatch):
    from psycopg_pool import ConnectionPool

    from portal.postgresql.base import check_pooled

    asked = []
    real = ConnectionPool.check_connection
    monkeypatch.setattr(
        ConnectionPool, "check_connection", lambda conn: asked.append(1) or real(conn)
    )
    params = {**connection.get_connection_params(), "autocommit": True}
    with psycopg.connect(**params) as conn:
        check_pooled(conn)
        assert asked == []  # no query: nothing to read on an idle socket
        terminate(conn.info.backend_pid)
        wait_for(lambda: not quietly_idle(conn), timeout=5)
        with pytest.raises(psycopg.OperationalError):
            check_pooled(conn)  # the pool then discards it and hands out another
        assert asked == [1]


def test_a_pooled_web_connection_uses_that_check():
    from portal.postgresql.base import check_pooled

    pooled = connection.copy(alias="pooled-check")
    pooled.settings_dict["OPTIONS"] = {
        **pooled.settings_dict["OPTIONS"],
        "pool": {"min_size": 1, "max_size": 1},
    }
    pooled.settings_dict["CONN_MAX_AGE"] = 0
    pooled.settings_dict["CONN_HEALTH_CHECKS"] = True
    try:
        assert pooled.pool._check is check_pooled
    finally:
        pooled.close_pool()


def test_timestamps_are_read_by_psycopgs_c_loader_exactly_as_djangos_loader_reads_them():
    """The C loader (portal/postgresql/base.py) gives every value Django's own loader
    gives: the same instant, with Django's UTC object; out-of-range values are refused
    by both."""
    raw = connection.connection
    assert raw.adapters.get_loader(TIMESTAMPTZ_OID, Format.TEXT) is UTCTimestamptzLoader
    rng = random.Random(7)
    start = datetime.datetime(1, 1, 1, tzinfo=datetime.UTC)
    span = (datetime.datetime(9999, 12, 31, tzinfo=datetime.UTC) - start).total_seconds()
    values = [start + datetime.timedelta(seconds=rng.uniform(0, span)) for _ in range(2000)]
    values += [start, datetime.datetime(2026, 3, 29, 1, 0, 0, 1, tzinfo=datetime.UTC)]
    values = [v.replace(microsecond=rng.randrange(10**6)) for v in values[:-2]] + values[-2:]
    djangos = type("Djangos", (BaseTzLoader,), {"timezone": datetime.UTC})(TIMESTAMPTZ_OID, raw)
    with connection.cursor() as cursor:
        cursor.execute("SELECT v, v::text FROM unnest(%s::timestamptz[]) AS v", [values])
        rows = cursor.fetchall()
        assert len(rows) == len(values)
        for value, (read, text) in zip(values, rows, strict=True):
            assert read == value == djangos.load(text.encode())
            assert read.tzinfo is datetime.UTC
        for beyond in ("infinity", "-infinity", "0044-03-15 12:00:00+00 BC"):
            with pytest.raises(psycopg.DataError):
                djangos.load(beyond.encode())
            with pytest.raises(DataError):
                cursor.execute("SELECT %s::timestamptz", [beyond])
                cursor.fetchone()
