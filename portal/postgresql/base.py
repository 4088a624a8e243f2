"""Django's PostgreSQL backend, with a health check that costs no round trip.

CONN_HEALTH_CHECKS makes Django send `SELECT 1` before each request's first query,
so a persistent connection the server has closed (a restart, `pg_terminate_backend`,
an idle timeout) is replaced instead of failing the request. That is one more round
trip on every request: on the busiest endpoint, a sixth of its time.

A server that closes a connection sends an error and a FIN first, so the socket of a
closed connection has something to read. The socket of a healthy idle connection
has nothing: no query is outstanding. So the check looks at the socket without
waiting, and asks PostgreSQL only when there is something there or the connection
is not idle. A link cut without a FIN is not seen, as it is not by `SELECT 1`, which
would wait for the socket timeout. Pooled connections (web processes) get the same
check when the pool hands them out, in place of psycopg_pool's empty query.

Timestamps are read by psycopg's C loader. Django registers its own loader for
`timestamptz`, a Python subclass of psycopg's pure-Python one, only to put its UTC
object on each value; psycopg's C loader (psycopg-binary) gives that same object when
the session's TimeZone is UTC, which Django sets on every connection when USE_TZ is on
and the database has no TIME_ZONE of its own. Two and a half microseconds a value, and
a console page of fifty rows reads two hundred of them.
"""

from __future__ import annotations

import datetime
import functools
import select

from django.conf import settings
from django.db.backends.postgresql import base
from psycopg import adapt, pq
from psycopg_pool import ConnectionPool

try:
    from psycopg_binary._psycopg import TimestamptzLoader as _CTimestamptzLoader
except ImportError:  # psycopg without its C extension: Django's loader stays
    _CTimestamptzLoader = None


class UTCTimestamptzLoader:
    """psycopg's C `timestamptz` loader, with the `timezone` attribute Django's
    create_cursor compares (it cannot be subclassed, being a C type)."""

    timezone = datetime.UTC
    format = pq.Format.TEXT

    def __init__(self, oid, context=None):
        self.load = _CTimestamptzLoader(oid, context).load


@functools.cache
def _utc_adapters(template: adapt.AdaptersMap) -> adapt.AdaptersMap:
    adapters = adapt.AdaptersMap(template)
    adapters.register_loader("timestamptz", UTCTimestamptzLoader)
    return adapters


def quietly_idle(connection) -> bool:
    """True when the connection is idle, outside a transaction, with nothing to read."""
    if connection.closed or connection.broken:
        return False
    if connection.info.transaction_status != pq.TransactionStatus.IDLE:
        return False
    poller = select.poll()
    poller.register(connection.fileno(), select.POLLIN | select.POLLPRI)
    return not poller.poll(0)


def check_pooled(connection) -> None:
    """The pool's check of a connection it hands out: psycopg_pool's own sends an empty
    query (a round trip on every request); this one asks PostgreSQL only when the
    socket shows the server closed it, or the connection is not idle."""
    if not quietly_idle(connection):
        ConnectionPool.check_connection(connection)


class DatabaseWrapper(base.DatabaseWrapper):
    def get_connection_params(self):
        params = super().get_connection_params()
        if _CTimestamptzLoader is not None and settings.USE_TZ and self.timezone is datetime.UTC:
            params["context"] = _utc_adapters(params["context"])
        return params

    @property
    def pool(self):
        created = self.alias not in self._connection_pools
        pool = super().pool
        if created and pool is not None and pool._check is not None:
            # Django passes ConnectionPool.check_connection when CONN_HEALTH_CHECKS is
            # on; the pool is not open yet, so no connection was checked the old way.
            pool._check = check_pooled
        return pool

    def close_if_health_check_failed(self):
        if (
            self.connection is not None
            and self.health_check_enabled
            and not self.health_check_done
            and not self.pool
            and quietly_idle(self.connection)
        ):
            self.health_check_done = True
            return
        super().close_if_health_check_failed()
