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
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import pq
from psycopg_pool import ConnectionPool


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
