"""Work only one process may do at a time, held for as long as it takes."""

from __future__ import annotations

from contextlib import contextmanager

from django.db import connection


@contextmanager
def session_lock(name: str, *, wait: bool = True):
    """A PostgreSQL session advisory lock named `name`, held by this process's database
    connection until the block ends. It goes with the connection, so a process that
    dies mid-work frees it. Yields True once held; with `wait=False`, yields False at
    once when another holds it."""
    take = "pg_advisory_lock" if wait else "pg_try_advisory_lock"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {take}(hashtextextended(%s, 0))", [name])  # noqa: S608
        held = cursor.fetchone()[0] is not False
    try:
        yield held
    finally:
        # A connection lost meanwhile (PostgreSQL restarted) took the lock with it.
        if held and connection.is_usable():
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(hashtextextended(%s, 0))", [name])
