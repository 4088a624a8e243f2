"""Work only one process may do at a time, held for as long as it takes."""

from __future__ import annotations

import logging
from contextlib import contextmanager

import psycopg
from django.db import connection

logger = logging.getLogger(__name__)


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
    params = connection.get_connection_params()
    holder = psycopg.connect(**params)
    take = "pg_advisory_xact_lock" if wait else "pg_try_advisory_xact_lock"
    try:
        held = holder.execute(f"SELECT {take}(hashtextextended(%s, 0))", [name]).fetchone()[0]  # noqa: S608
        yield held is not False
    finally:
        # Ending the transaction frees the lock; a connection lost meanwhile (PostgreSQL
        # restarted) has freed it already.
        try:
            holder.rollback()
        except psycopg.Error:
            logger.info("the connection holding lock %s was lost before its release", name)
        finally:
            holder.close()
