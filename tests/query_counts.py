"""Query-count assertions shared by every list test: a list page or endpoint must cost
the same number of statements whatever the number of rows (NetBox's
`utilities/testing/query_counts.py` has the same idea)."""

from __future__ import annotations

from collections.abc import Callable

from django.db import connection
from django.test.utils import CaptureQueriesContext


def queries_for(fetch: Callable[[], object], *, status: int = 200) -> int:
    """The statements `fetch()` ran; its response must answer `status`."""
    with CaptureQueriesContext(connection) as ctx:
        response = fetch()
    assert response.status_code == status, getattr(response, "content", b"")[:500]
    return len(ctx.captured_queries)


def assert_flat_query_count(
    add_rows: Callable[[int], object], fetch: Callable[[], object], *, few: int = 2, more: int = 8
) -> int:
    """Add `few` rows, count `fetch()`'s statements, add `more` rows, count again: the
    two counts must be equal. Returns the count, for a test that also bounds it.

    Counted as a web process serves the page once it has served the caller before: one
    request first fills the auth cache (apps.tenancy.auth_cache), whose miss is a
    statement or two for the caller, not for the rows."""
    add_rows(few)
    fetch()
    before = queries_for(fetch)
    add_rows(more)
    after = queries_for(fetch)
    assert before == after, f"{before} statements with {few} rows, {after} with {few + more}"
    return after


def every_page(client, url: str) -> list[dict]:
    """Every row of a cursor-paginated API list, following `next` from `url`."""
    rows = []
    while url:
        page = client.get(url)
        assert page.status_code == 200, page.content[:500]
        rows += page.json()["results"]
        url = page.json()["next"]
    return rows
