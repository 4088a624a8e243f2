"""Prometheus metrics at `/metrics`: the web tier's request figures and Steward's own
gauges, read from the database at scrape time.

Request figures are counted in each web process; with several processes (gunicorn
workers) set `PROMETHEUS_MULTIPROC_DIR` to a directory they share, emptied at start,
and the scrape sums them (`make run` and docker-compose do). The gauges come from the
database, so any web process answers for every worker and beat.

With several web replicas each is scraped for its own processes' figures
(`?part=process`, one target per replica, each with a directory of its own), and the
gauges are scraped once, through the replicas' shared address (`?part=state`): were
every replica scraped for them, a sum across replicas would count each figure once per
replica. Without `part`, both (one replica). The endpoint answers
a bearer token (`STEWARD_METRICS_TOKEN`) or, without one, only the networks in
`STEWARD_METRICS_ALLOW` (loopback by default in development, none in production).

Core imports no other app: each app contributes its gauges through its `gauges.py`.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import socket
import threading
import time
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from django.conf import settings
from django.http import HttpResponse, HttpResponseForbidden
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    REGISTRY,
    CollectorRegistry,
    Histogram,
    generate_latest,
    make_wsgi_app,
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily

from apps.core.addresses import client_address
from apps.core.api.exceptions import problem_response
from apps.core.codes import CoreCode
from apps.core.hooks import app_modules
from apps.core.schedules import schedule_health
from apps.core.scope import system_scope
from apps.core.view_scope import unscoped

REQUESTS = Histogram(
    "steward_http_request_duration_seconds",
    "Time to answer a request, by route pattern, method and status.",
    ["route", "method", "status"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
)


class MetricsMiddleware:
    """Times every request under its URL pattern (not its path: ids would make a new
    series each), so the cardinality stays that of the URL conf."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None else "unmatched"
        REQUESTS.labels(route, request.method, str(response.status_code)).observe(
            time.perf_counter() - started
        )
        return response


def age_seconds(oldest) -> float:
    """Seconds since `oldest` (0 when there is none), for the gauges of a backlog."""
    return (timezone.now() - oldest).total_seconds() if oldest else 0.0


def gauge(name, help_text, value, labels=None) -> GaugeMetricFamily:
    """One gauge: a value, or with `labels` a list of (label values, value)."""
    family = GaugeMetricFamily(name, help_text, labels=labels)
    if labels:
        for key, figure in value:
            family.add_metric(key, figure)
    else:
        family.add_metric([], value)
    return family


def gauge_by(name, help_text, rows, label) -> GaugeMetricFamily:
    """A gauge with one label, from (label value, value) rows (a GROUP BY)."""
    return gauge(name, help_text, [([key], n) for key, n in rows], labels=[label])


class StewardCollector:
    """Steward's own state, read at scrape time in the system scope: every app's gauges
    (its `gauges.py`, apps.core.hooks), one query per figure, then the schedules'."""

    def collect(self):
        with system_scope():
            for module in app_modules("gauges"):
                yield from module.collect()
            yield from schedule_gauges()


def schedule_gauges():
    health = schedule_health()
    yield gauge(
        "steward_schedule_late",
        "1 when a periodic job's due run has not succeeded in time (apps.core.schedules).",
        [([j.name], 1 if j.late else 0) for j in health],
        labels=["job"],
    )
    yield gauge(
        "steward_schedule_last_success_timestamp_seconds",
        "When each periodic job last succeeded (Unix time; 0 never).",
        [([j.name], j.last_succeeded_at.timestamp() if j.last_succeeded_at else 0) for j in health],
        labels=["job"],
    )
    yield gauge(
        "steward_schedule_last_duration_seconds",
        "How long each periodic job's last run took.",
        [([j.name], (j.last_duration_ms or 0) / 1000) for j in health],
        labels=["job"],
    )


def _allowed(request) -> bool:
    # The client's address, not a trusted proxy's (apps.core.addresses): behind one,
    # every caller would otherwise come from the proxy's own, often loopback, address.
    return scrape_allowed(request.headers.get("Authorization", ""), client_address(request))


def scrape_allowed(authorization: str, client: str) -> bool:
    """The metrics token when one is set, or else a client in STEWARD_METRICS_ALLOW."""
    token = settings.STEWARD_METRICS_TOKEN
    if token:
        given = authorization.removeprefix("Bearer ").strip()
        return hmac.compare_digest(given.encode(), token.encode())
    try:
        address = ipaddress.ip_address(client)
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(net) for net in settings.STEWARD_METRICS_ALLOW)


@unscoped
@require_GET
@never_cache
def metrics(request):
    if not _allowed(request):
        return HttpResponseForbidden("Metrics need the metrics token or an allowed network.\n")
    part = request.GET.get("part", "")
    if part not in PARTS:
        return problem_response(
            status_code=400,
            code=CoreCode.INVALID,
            title="Unknown part",
            detail="part is process (this replica's figures) or state (Steward's gauges).",
        )
    body = b""
    if part in ("", "process"):
        body += generate_latest(_process_registry())
    if part in ("", "state"):
        steward = CollectorRegistry()
        steward.register(StewardCollector())
        body += generate_latest(steward)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)


PARTS = {"", "process", "state"}


def _process_registry() -> CollectorRegistry:
    """This replica's processes' figures: the workers' files summed, or this process's."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    processes = CollectorRegistry()
    multiprocess.MultiProcessCollector(processes)
    return processes


# --------------------------------------------------------------------------- other processes


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        """A scrape every few seconds is not news."""


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a slow scraper never holds the process at exit


class _ThreadingWSGIServer6(_ThreadingWSGIServer):
    address_family = socket.AF_INET6


def serve_metrics(address: str) -> WSGIServer:
    """This process's own figures at http://<address>/metrics, from a daemon thread: for
    a process that serves no web requests (`run_consumers`), guarded as the web's
    /metrics is (the token, or else the allowed networks; the peer's own address, as
    no proxy stands in front). `address` is host:port; port 0 takes a free one (the
    returned server's `server_port`). Stop it with `shutdown()`."""
    host, _, port = address.rpartition(":")
    figures = make_wsgi_app(REGISTRY)

    def app(environ, start_response):
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"Metrics are at /metrics.\n"]
        if not scrape_allowed(environ.get("HTTP_AUTHORIZATION", ""), environ["REMOTE_ADDR"]):
            start_response("403 Forbidden", [("Content-Type", "text/plain")])
            return [b"Metrics need the metrics token or an allowed network.\n"]
        return figures(environ, start_response)

    host = host.strip("[]") or "0.0.0.0"  # noqa: S104 - the operator chose to listen widely
    server_class = _ThreadingWSGIServer6 if ":" in host else _ThreadingWSGIServer
    server = make_server(host, int(port), app, server_class, handler_class=_QuietHandler)
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    return server
