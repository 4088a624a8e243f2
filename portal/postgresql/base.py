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
would wait for the socket timeout.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base
from psycopg import pq


def quietly_idle(connection) -> bool:
    """True when the connection is idle, outside a transaction, with nothing to read."""
    if connection.closed or connection.broken:
        return False
    if connection.info.transaction_status != pq.TransactionStatus.IDLE:
        return False
    poller = select.poll()
    poller.register(connection.fileno(), select.POLLIN | select.POLLPRI)
    return not poller.poll(0)


class DatabaseWrapper(base.DatabaseWrapper):
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
