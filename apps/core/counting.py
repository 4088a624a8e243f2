"""Counts that stay cheap however large a table grows: exact up to a bound, PostgreSQL's
estimate above it.

An operator's page and the metrics scrape count the outbox backlog and each consumer's
inbox on every view. Counted exactly, their cost grows with the table: an outbox that
backs up to millions of events during an outage made the eventing page slowest exactly
when someone needed it. So a count stops at COUNTED_EXACTLY + 1 rows; past that the
figure is the planner's row estimate for the table (`pg_class.reltuples`, kept by
autovacuum's ANALYZE), never below the bound, and says it is an estimate.
"""

from __future__ import annotations

from typing import NamedTuple

COUNTED_EXACTLY = 10_000


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
