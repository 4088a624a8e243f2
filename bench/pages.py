"""`pages`: what one console page costs the web process, each kept fast path against
the path it replaced, alternated in one process on the same data.

The load case (bench/load.py) measures the pages as deployed, against /healthz; on a
shared machine its spread between runs is wider than a change worth ten percent. This
case isolates the web process's CPU: each page is requested through Django's request
handler (no socket, no server), and for each figure its baseline is the same page with
the fast path turned off, the two alternated request by request, so a busy neighbour
slows both alike.

- `console_assets_rows`: the asset list (a tenant admin, a page of 50) reading its
  rows as `.values()` (apps.console.rows) against reading model instances.
- `console_eventing_reads`: the operator's eventing overview with its selectors'
  blocks of reads in the page's own scope (`system_scope(reads_only=True)`) against a
  savepoint for each.
- `console_assets_person`: the asset list with its session and its signed-in person
  read through the auth cache (apps.tenancy.sessions, apps.tenancy.backends) against
  Django's database sessions and ModelBackend, each a statement a page.
- `console_assets_filters`: the asset list binding only the filters its request names
  (apps.console.listing.bound_filterset) against binding its whole FilterSet.
- `console_eventing_lag_history`: the operator's eventing overview with an hour of lag
  samples for 36 consumer groups (12 topics of three each, recorded minute by minute by
  `lag_sample_record`, as `eventing.periodic_sample_lag` does), Redis's answers read by
  hiredis (redis-py's C parser, a dependency) against redis-py's own Python parser.

Within a round the two paths are switched request by request; each round gives the
median CPU time (`time.process_time`) of N requests of each, the figure is the median
round, the ratio fast ÷ baseline (below 1 is faster).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from datetime import timedelta
from importlib import import_module

import redis
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY
from django.test import Client, override_settings
from django.utils import timezone
from redis._parsers import _HiredisParser, _RESP3Parser

from apps.assets.views import AssetListView
from apps.console import listing
from apps.core import scope
from apps.core.redis import get_redis
from apps.eventing import dispatcher, lag, selectors, services
from apps.eventing.transports import stream_key
from apps.registry.models import Topic
from bench.load import _seed

# The baseline reads the person the way Django's own backend does.
STOCK_BACKEND = "django.contrib.auth.backends.ModelBackend"


def _timed(request: Callable[[], object]) -> float:
    started = time.process_time()
    request()
    return time.process_time() - started


def _alternate(request, fast: Callable[[], None], slow: Callable[[], None], rounds, count):
    """The request's CPU time with the fast path and with its baseline, switched request
    by request (a neighbour's burst or a frequency change falls on both alike): each
    round the median of `count` requests of each, the figure the median round."""
    for switch in (fast, slow):  # warm both paths' caches before measuring either
        switch()
        for _ in range(10):
            request()
    figures: dict[str, list[float]] = {"fast": [], "baseline": []}
    for _ in range(rounds):
        spent: dict[str, list[float]] = {"fast": [], "baseline": []}
        for _ in range(count):
            for name, switch in (("fast", fast), ("baseline", slow)):
                switch()
                spent[name].append(_timed(request))
        for name, times in spent.items():
            figures[name].append(statistics.median(times) * 1000)
    fast()
    fast_ms, base_ms = (statistics.median(figures[k]) for k in ("fast", "baseline"))
    return {
        "ms": round(fast_ms, 2),
        "baseline_ms": round(base_ms, 2),
        "ratio": round(fast_ms / base_ms, 3),
        "rounds_ms": {k: [round(v, 2) for v in sorted(vs)] for k, vs in figures.items()},
    }


def _signed_in(session_key: str) -> Client:
    client = Client(HTTP_HOST="localhost")
    client.cookies[settings.SESSION_COOKIE_NAME] = session_key
    return client


def _stock_client(session_key: str) -> Client:
    """A client whose requests read the session and the person from PostgreSQL, as
    Django's database sessions and ModelBackend do: the same session, copied under a key
    of its own that names the stock backend. Its handler is built while the stock engine
    is configured, so its session middleware keeps that engine."""
    stock = import_module("django.contrib.sessions.backends.db")
    copy = stock.SessionStore()
    copy.update(stock.SessionStore(session_key).load())
    copy[BACKEND_SESSION_KEY] = STOCK_BACKEND
    copy.save()
    client = _signed_in(copy.session_key)
    with override_settings(SESSION_ENGINE="django.contrib.sessions.backends.db"):
        client.get("/healthz")
    return client


def _lag_history(topics: int = 12, groups_per_topic: int = 3) -> list[str]:
    """An hour of lag samples as a running deployment has them: consumer groups behind
    on their topics' streams, sampled once a minute. The topics' names, for cleaning up."""
    client, names = get_redis(), []
    for t in range(topics):
        name = f"bench.lag.t{t:02d}"
        Topic.objects.get_or_create(name=name, defaults={"current_schema_version": 1})
        key = stream_key(name)
        client.delete(key)
        for n in range(30):
            client.xadd(key, {"n": n})
        for g in range(groups_per_topic):
            client.xgroup_create(key, f"consumer-{t}-{g}", id="0")
        names.append(name)
    now = timezone.now()
    for minute in range(60, -1, -1):
        for t, name in enumerate(names):  # the groups read a little between samples
            group = f"consumer-{t}-{minute % groups_per_topic}"
            client.xreadgroup(group, "bench", {stream_key(name): ">"}, count=1)
        services.lag_sample_record(now - timedelta(minutes=minute))
    return names


def _parsers(client: redis.Redis):
    """Switches for `client` between hiredis and redis-py's Python parser: a pool each."""
    pools = {
        parser: redis.ConnectionPool(
            **{**client.connection_pool.connection_kwargs, "parser_class": parser},
            connection_class=client.connection_pool.connection_class,
        )
        for parser in (_HiredisParser, _RESP3Parser)
    }

    def use(parser):
        return lambda: setattr(client, "connection_pool", pools[parser])

    return use(_HiredisParser), use(_RESP3Parser)


def run(*, quick: bool) -> dict:
    assets, events = (20_000, 20_000) if quick else (100_000, 100_000)
    rounds, count = (4, 40) if quick else (8, 100)
    _, sessions = _seed(assets, events)
    admin, operator = _signed_in(sessions["admin"]), _signed_in(sessions["operator"])

    def page(client, path):
        def request():
            response = client.get(path)
            if response.status_code != 200:
                raise RuntimeError(f"{path} answered {response.status_code}")

        return request

    fields = AssetListView.row_fields

    def set_rows(value):
        return lambda: setattr(AssetListView, "row_fields", value)

    reads_only = scope.system_scope

    def with_savepoints(*, reads_only: bool = False):
        return scope.system_scope()

    def set_scope(function):
        def switch():
            dispatcher.system_scope = selectors.system_scope = function

        return switch

    # Both backends stay configured while the case runs: Django checks a session's
    # backend against the setting on every request.
    settings.AUTHENTICATION_BACKENDS = [*settings.AUTHENTICATION_BACKENDS, STOCK_BACKEND]
    stock_admin = _stock_client(sessions["admin"])
    current = {"client": admin}

    def as_client(client):
        return lambda: current.__setitem__("client", client)

    def assets_page():
        response = current["client"].get("/assets/")
        if response.status_code != 200 or response.wsgi_request.user.username != "load-admin":
            raise RuntimeError(f"/assets/ answered {response.status_code}")

    narrowed = listing.bound_filterset

    def whole(filterset_class, query, queryset):
        return filterset_class(query, queryset=queryset)

    def set_filters(function):
        return lambda: setattr(listing, "bound_filterset", function)

    figures = {
        "name": "pages",
        "assets": assets,
        "outbox_events": events,
        "rounds": rounds,
        "requests_per_round": count,
        "console_assets_rows": _alternate(
            page(admin, "/assets/"), set_rows(fields), set_rows(()), rounds, count
        ),
        "console_eventing_reads": _alternate(
            page(operator, "/eventing/"),
            set_scope(reads_only),
            set_scope(with_savepoints),
            rounds,
            count,
        ),
        "console_assets_person": _alternate(
            assets_page, as_client(admin), as_client(stock_admin), rounds, count
        ),
        "console_assets_filters": _alternate(
            page(admin, "/assets/"), set_filters(narrowed), set_filters(whole), rounds, count
        ),
    }
    # Last: its lag samples would be drawn by the overview's other case too.
    names = _lag_history()
    client = get_redis()
    own_pool = client.connection_pool
    with_hiredis, with_python_parser = _parsers(client)
    try:
        lag_history = _alternate(
            page(operator, "/eventing/"), with_hiredis, with_python_parser, rounds, count
        )
    finally:
        client.connection_pool = own_pool
        client.delete(*map(stream_key, names))
        client.delete(*client.scan_iter(lag.LAG_HISTORY_KEY.format(minute="*")))
    figures["console_eventing_lag_history"] = lag_history
    return figures
