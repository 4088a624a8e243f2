"""Work a person started that a worker finishes (a replay, a sweep, an order's phases),
shown on the page that started it until it ends.

One mechanism, the governance order page's: the page draws the work's progress with the
state it shows, and asks for that part again every few seconds (htmx); once the work's
state is no longer the one the page shows, the answer reloads the whole page, so its
result, messages and actions change with it. Without JavaScript, the part offers a link
that reloads the page.
"""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlencode

from django.http import HttpResponse

# Seconds between two asks while the work runs: a replay or a sweep ends within seconds.
POLL_SECONDS = 2


@dataclass(frozen=True)
class Progress:
    """`state` is what the page shows (the ask sends it back); `said` says it in words;
    `url` answers the progress part again (with `query` and the state); `percent` is
    None while the work cannot tell how far it is."""

    state: str
    said: str
    url: str
    query: tuple[tuple[str, str], ...] = ()
    percent: int | None = None
    seconds: int = POLL_SECONDS

    @property
    def ask_url(self) -> str:
        return f"{self.url}?{urlencode((*self.query, ('state', self.state)))}"


def reload_when_moved(shown: str | None, state: str) -> HttpResponse | None:
    """The answer that reloads the page when the work's `state` is no longer the one the
    page `shown`; None while it still is (the caller draws the progress part again)."""
    if shown == state:
        return None
    response = HttpResponse(status=204)
    response["HX-Refresh"] = "true"
    return response
