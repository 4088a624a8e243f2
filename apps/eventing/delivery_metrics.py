"""What the consumers process did, as Prometheus counters of the process: deliveries,
failed attempts, dead letters, events dropped, and the brokers lost, per subscription
group. The database's gauges (steward_deliveries_last_hour and the rest, on the web's
/metrics) say how things stand; these say what each consumers process went through,
including what leaves no row behind (an event of a deleted tenant, a dead letter of a
subscription that is gone, a broker that went away). The process serves them on
`STEWARD_CONSUMERS_METRICS_ADDRESS` (`run_consumers`; apps.core.metrics.serve_metrics).
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge

DELIVERIES = Counter(
    "steward_consumer_deliveries",
    "Envelopes a subscription group took (delivered), attempts that failed (failed), and "
    "envelopes given up on and kept as dead letters (dead_lettered).",
    ["group", "outcome"],
)
DROPPED = Counter(
    "steward_consumer_events_dropped",
    "Events acknowledged without delivery or dead letter: their tenant was deleted "
    "(tenant_deleted), or a dead letter names no active subscription (no_subscription).",
    ["group", "reason"],
)
RUNNER_ERRORS = Counter(
    "steward_consumer_runner_errors",
    "A runner lost its broker (broker_lost: Redis or RabbitMQ away, a connection cut) or "
    "stopped on an unexpected error (error); it carries on after a pause.",
    ["group", "kind"],
)
RUNNERS = Gauge("steward_consumer_runners", "Runner threads this consumers process runs.")


def count_delivery(group: str, outcome: str, n: int = 1) -> None:
    DELIVERIES.labels(group, outcome).inc(n)


def count_dropped(group: str, reason: str, n: int = 1) -> None:
    DROPPED.labels(group, reason).inc(n)


def count_runner_error(group: str, kind: str) -> None:
    RUNNER_ERRORS.labels(group, kind).inc()
