"""API readers for benchmarks, run in processes of their own (spawned: this module
imports nothing from Django until the process has set it up)."""

from __future__ import annotations

import os
import time

WARM_UP = 30  # reads before any is measured: connections, caches, first compilations
READ_URL = "/api/v1/eventing/recent-events/?page_size=50"


def read_api(database_url: str, secret: str, limit: int | None, ready, stop, out) -> None:
    """A reader process, as the web tier is one apart from the worker: API reads back
    to back after a warm-up, until `stop` is set or `limit` are done; sends
    (latencies in ms, failures) through `out`."""
    os.environ["DATABASE_URL"] = database_url
    os.environ["STEWARD_API_RATE"] = "100000000/min"  # throttled, never refused
    os.environ["STEWARD_LOG_LEVEL"] = "WARNING"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "portal.settings")
    import django

    django.setup()
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    latencies: list[float] = []
    failures = 0
    for _ in range(WARM_UP):
        client.get(READ_URL)
    ready.set()
    while not stop.is_set() and (limit is None or len(latencies) < limit):
        started = time.perf_counter()
        response = client.get(READ_URL)
        latencies.append((time.perf_counter() - started) * 1000)
        failures += response.status_code != 200
    out.send((latencies, failures))
