"""Counts that stay cheap however large a table grows: exact up to a bound, PostgreSQL's
estimate above it.

An operator's page and the metrics scrape count the outbox backlog and each consumer's
inbox on every view. Counted exactly, their cost grows with the table: an outbox that
backs up to millions of events during an outage made the eventing page slowest exactly
when someone needed it. So a count stops at COUNTED_EXACTLY + 1 rows; past that the
figure is the planner's row estimate for the table (`pg_class.reltuples`, kept by
autovacuum's ANALYZE), never below the bound, and says it is an estimate.

A console list counts its matching rows the same way (`count_up_to`), and a count that
reached past its bound is remembered for a few seconds: a large tenant's list said
"10,000+" by reading ten thousand index entries on every page, most of PostgreSQL's
time for the page. The outbox backlog on the eventing page is remembered the same way
(`counted_past_bound` and `read_count`, for a statement of its own).

Each web process remembers for itself. Shared in Redis, the memory cost every page a
round trip to ask, more than the count it saved once each few seconds in each process.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import NamedTuple

from django.core.exceptions import EmptyResultSet
from django.db import connections

from apps.core.scope import current_scope

COUNTED_EXACTLY = 10_000

# How long a count that reached past its bound stands without being read again. Only
# that fact is kept, never a figure under the bound: a list under it is counted on every
# page, so a row added or removed shows at once, and a list past it could only read
# differently once enough rows went to bring it under the bound.
PAST_BOUND_SECONDS = 15
# Statements this process remembers at most (the oldest forgotten first): one per list,
# filter and scope read in the last PAST_BOUND_SECONDS.
_REMEMBERED_AT_MOST = 4096
_past_bound: dict[str, float] = {}  # key -> monotonic deadline
_remembering = threading.Lock()


class Count(NamedTuple):
    n: int
    estimated: bool


# The planner's estimate of a table's rows (the table's name the one parameter): 0
# before its first ANALYZE (-1 there). A statement, or a scalar sub-select in another.
TABLE_ESTIMATE = "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = %s::regclass"


def table_estimate(cursor, table: str) -> int:
    """The planner's estimate of a table's rows: 0 before its first ANALYZE (-1 there)."""
    cursor.execute(TABLE_ESTIMATE, [table])
    row = cursor.fetchone()
    return row[0] if row else 0


def bounded(counted: int, estimate) -> Count:
    """What a count read with `LIMIT COUNTED_EXACTLY + 1` answers: itself when it stayed
    under the bound, otherwise `estimate()` (called only then), never below the bound."""
    if counted <= COUNTED_EXACTLY:
        return Count(counted, False)
    return Count(max(COUNTED_EXACTLY + 1, round(estimate())), True)


def _past_bound_key(db: str, bound: int, sql: str, params) -> str:
    # Row-level security makes the same statement count different rows in different
    # scopes, so the scope is part of what was counted.
    scope = current_scope()
    counted = repr((connections[db].settings_dict["NAME"], scope, bound, sql, tuple(params)))
    return hashlib.blake2b(counted.encode(), digest_size=16).hexdigest()


def _remembered(key: str) -> bool:
    deadline = _past_bound.get(key)
    if deadline is None:
        return False
    if deadline > time.monotonic():
        return True
    _past_bound.pop(key, None)
    return False


def _remember(key: str) -> None:
    # Under a lock: iterating the dict while another thread adds to it would raise.
    with _remembering:
        _past_bound.pop(key, None)  # to the end: dicts keep insertion order
        _past_bound[key] = time.monotonic() + PAST_BOUND_SECONDS
        while len(_past_bound) > _REMEMBERED_AT_MOST:
            _past_bound.pop(next(iter(_past_bound)), None)


def forget_past_bound() -> None:
    """Forget every count remembered past its bound (tests whose rows roll back)."""
    _past_bound.clear()


def counted_past_bound(sql: str, db: str = "default") -> bool:
    """Whether `sql`, a statement counting up to COUNTED_EXACTLY + 1, counted past the
    bound in this scope within the last PAST_BOUND_SECONDS: then its answer is one past
    the bound, and it need not be read. Give what it reads to `read_count`.

    A caller that reads the count inside a larger statement swaps in a statement of
    its own for it while it is remembered, rather than passing a LIMIT of 0 to the same
    one: a prepared statement whose limit varies is planned on every run."""
    return _remembered(_past_bound_key(db, COUNTED_EXACTLY, sql, ()))


def read_count(sql: str, counted: int, db: str = "default") -> int:
    """`counted`, as `sql` read it, remembered when past the bound."""
    if counted > COUNTED_EXACTLY:
        _remember(_past_bound_key(db, COUNTED_EXACTLY, sql, ()))
    return counted


def count_up_to(rows, bound: int) -> int:
    """How many rows the queryset `rows` holds, read no further than `bound + 1`.

    A count past the bound is remembered for PAST_BOUND_SECONDS for the same statement
    in the same scope, and answered as `bound + 1` without PostgreSQL meanwhile.
    """
    if rows.query.distinct:
        # What DISTINCT leaves depends on the columns it is over; Django's count keeps them.
        return rows.order_by()[: bound + 1].count()
    try:
        sql, params = rows.order_by().values("pk")[: bound + 1].query.sql_with_params()
    except EmptyResultSet:  # a filter no row can meet (`__in=[]`): Django reads nothing
        return 0
    key = _past_bound_key(rows.db, bound, sql, params)
    if _remembered(key):
        return bound + 1
    with connections[rows.db].cursor() as cursor:
        cursor.execute(f"SELECT COUNT(*) FROM ({sql}) counted", params)  # noqa: S608
        counted = cursor.fetchone()[0]
    if counted > bound:
        _remember(key)
    return counted
