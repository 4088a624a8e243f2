"""Work only one process may do at a time, held for as long as it takes."""

from __future__ import annotations

import logging
import time
from contextlib import contextmanager

import psycopg
from django.db import connection

logger = logging.getLogger(__name__)
TRY_LOCK = "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))"
# A waiter asks again after this long, twice as long each time up to the most.
RETRY_FIRST, RETRY_MOST = 0.05, 2.0


@contextmanager
def advisory_lock(name: str, *, wait: bool = True):
    """A PostgreSQL advisory lock named `name`, held until the block ends. Yields True
    once held; with `wait=False`, yields False at once when another holds it.

    The lock is transaction-level, taken on a connection of its own whose transaction
    stays open for the block: a pooler in transaction mode (PgBouncer) keeps one server
    connection for a transaction, so the lock lives where it was taken, whereas a session
    lock would stay behind on a server connection the pooler hands to someone else. The
    block's own work runs on the caller's connection in as many transactions as it likes,
    each committed as it goes. A process that dies mid-work drops the holding connection,
    and PostgreSQL (or the pooler, closing its server side) frees the lock with it.
    """
    holder = _take(name, wait=wait)
    try:
        yield holder is not None
    finally:
        if holder is not None:
            _release(holder, name)


def _take(name: str, *, wait: bool) -> psycopg.Connection | None:
    """The connection whose open transaction holds the lock, or None (not waiting).

    A waiter asks again and again, ending its transaction between tries, rather than
    block inside PostgreSQL: blocked, it would keep a pooled server connection that the
    lock's holder may need for its work, and enough waiters would starve the holder."""
    holder = psycopg.connect(**connection.get_connection_params())
    pause = RETRY_FIRST
    try:
        while not holder.execute(TRY_LOCK, [name]).fetchone()[0]:
            holder.rollback()
            if not wait:
                holder.close()
                return None
            time.sleep(pause)
            pause = min(pause * 2, RETRY_MOST)
    except BaseException:
        holder.close()
        raise
    return holder


def _release(holder: psycopg.Connection, name: str) -> None:
    # Ending the transaction frees the lock; a connection lost meanwhile (PostgreSQL
    # restarted) has freed it already.
    try:
        holder.rollback()
    except psycopg.Error:
        logger.info("the connection holding lock %s was lost before its release", name)
    finally:
        holder.close()
