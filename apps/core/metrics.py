"""Prometheus metrics at `/metrics`: the web tier's request figures and Steward's own
gauges, read from the database at scrape time.

Request figures are counted in each web process; with several processes (gunicorn
workers) set `PROMETHEUS_MULTIPROC_DIR` to a directory they share, emptied at start,
and the scrape sums them (`make run` and docker-compose do). The gauges come from the
database, so any web process answers for every worker and beat. The endpoint answers
a bearer token (`STEWARD_METRICS_TOKEN`) or, without one, only the networks in
`STEWARD_METRICS_ALLOW` (loopback by default).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import time
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Count, Min, Q, Sum
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
    multiprocess,
)
from prometheus_client.core import GaugeMetricFamily

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


def _age(oldest) -> float:
    return (timezone.now() - oldest).total_seconds() if oldest else 0.0


def _gauge(name, help_text, value, labels=None):
    family = GaugeMetricFamily(name, help_text, labels=labels)
    if labels:
        for key, figure in value:
            family.add_metric(key, figure)
    else:
        family.add_metric([], value)
    return family


class StewardCollector:
    """Steward's own state, one query per figure, in the system scope."""

    def collect(self):
        from apps.core.scope import system_scope

        with system_scope():
            yield from self._collect()

    def _collect(self):
        from apps.assets.models import Asset
        from apps.compute.models import WorkflowBatchLink
        from apps.core.schedules import schedule_health
        from apps.eventing.models import (
            DeadLetter,
            DeliveryCount,
            InboxEntry,
            OutboxEvent,
            UncertainEffect,
        )
        from apps.governance.models import GovernanceTask
        from apps.registry.models import SchemaVersion
        from apps.stores.models import StoreBinding

        outbox = OutboxEvent.objects.aggregate(n=Count("id"), oldest=Min("occurred_at"))
        yield _gauge("steward_outbox_backlog", "Events waiting to be dispatched.", outbox["n"])
        yield _gauge(
            "steward_outbox_oldest_age_seconds",
            "Age of the oldest event waiting to be dispatched.",
            _age(outbox["oldest"]),
        )
        hour = DeliveryCount.objects.filter(minute__gte=timezone.now() - timedelta(hours=1))
        per_subscription = hour.values("subscription__consumer__name", "subscription__topic__name")
        per_subscription = per_subscription.annotate(ok=Sum("delivered"), bad=Sum("failed"))
        deliveries = [
            (
                [
                    r["subscription__consumer__name"] or "streams",
                    r["subscription__topic__name"] or "",
                ],
                r,
            )
            for r in per_subscription
        ]
        yield _gauge(
            "steward_deliveries_last_hour",
            "Events delivered in the last hour, per subscription (consumer, topic).",
            [(key, r["ok"] or 0) for key, r in deliveries],
            labels=["consumer", "topic"],
        )
        yield _gauge(
            "steward_delivery_failures_last_hour",
            "Failed delivery attempts in the last hour, per subscription (consumer, topic).",
            [(key, r["bad"] or 0) for key, r in deliveries],
            labels=["consumer", "topic"],
        )
        yield _by(
            "steward_dead_letters",
            "Dead letters by state.",
            DeadLetter.objects.values_list("state").annotate(n=Count("id")),
            "state",
        )
        with connection.cursor() as cursor:
            # An estimate (the planner's): counting a large inbox at every scrape would not be.
            cursor.execute(
                "SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE relname = %s",
                [InboxEntry._meta.db_table],
            )
            row = cursor.fetchone()
        yield _gauge(
            "steward_inbox_entries_estimate",
            "Handled-event records kept for deduplication (estimate).",
            row[0] if row else 0,
        )
        yield _by(
            "steward_uncertain_effects",
            "Calls to other systems whose outcome is not settled, by state.",
            UncertainEffect.objects.filter(state__in=["pending", "uncertain"])
            .values_list("state")
            .annotate(n=Count("id")),
            "state",
        )
        waiting = Asset.objects.workflow_managed().aggregate(
            n=Count("id"), oldest=Min("updated_at")
        )
        yield _gauge(
            "steward_workflow_assets_waiting",
            "Assets waiting on the Workflow Service.",
            waiting["n"],
        )
        yield _gauge(
            "steward_workflow_assets_oldest_wait_seconds",
            "How long the longest-waiting asset has waited on the Workflow Service.",
            _age(waiting["oldest"]),
        )
        yield _gauge(
            "steward_schema_versions_awaiting_acknowledgement",
            "Breaking schema versions held until every consumer acknowledges.",
            SchemaVersion.objects.filter(state=SchemaVersion.State.AWAITING).count(),
        )
        yield _by(
            "steward_store_bindings",
            "Store bindings by status.",
            StoreBinding.objects.values_list("status").annotate(n=Count("id")),
            "status",
        )
        tasks = GovernanceTask.objects.filter(status__in=GovernanceTask.OPEN).aggregate(
            open=Count("id"), overdue=Count("id", filter=Q(overdue_at__isnull=False))
        )
        yield _gauge(
            "steward_governance_tasks_open", "Governance tasks not yet settled.", tasks["open"]
        )
        yield _gauge(
            "steward_governance_tasks_overdue",
            "Governance tasks past their due date.",
            tasks["overdue"],
        )
        links = WorkflowBatchLink.objects.aggregate(n=Count("batch_id"), oldest=Min("created_at"))
        yield _gauge(
            "steward_batch_links_outstanding",
            "Compute batches a workflow step still waits on.",
            links["n"],
        )
        yield _gauge(
            "steward_batch_links_oldest_age_seconds",
            "Age of the oldest outstanding batch link.",
            _age(links["oldest"]),
        )
        health = schedule_health()
        yield _gauge(
            "steward_schedule_late",
            "1 when a periodic job has not succeeded within twice its interval.",
            [([j.name], 1 if j.late else 0) for j in health],
            labels=["job"],
        )
        yield _gauge(
            "steward_schedule_last_success_timestamp_seconds",
            "When each periodic job last succeeded (Unix time; 0 never).",
            [
                ([j.name], j.last_succeeded_at.timestamp() if j.last_succeeded_at else 0)
                for j in health
            ],
            labels=["job"],
        )
        yield _gauge(
            "steward_schedule_last_duration_seconds",
            "How long each periodic job's last run took.",
            [([j.name], (j.last_duration_ms or 0) / 1000) for j in health],
            labels=["job"],
        )


def _by(name, help_text, rows, label):
    return _gauge(name, help_text, [([key], n) for key, n in rows], labels=[label])


def _allowed(request) -> bool:
    token = settings.STEWARD_METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
        return hmac.compare_digest(given.encode(), token.encode())
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in ipaddress.ip_network(net) for net in settings.STEWARD_METRICS_ALLOW)


@unscoped
@require_GET
@never_cache
def metrics(request):
    if not _allowed(request):
        return HttpResponseForbidden("Metrics need the metrics token or an allowed network.\n")
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        processes = CollectorRegistry()
        multiprocess.MultiProcessCollector(processes)
    else:
        processes = REGISTRY
    steward = CollectorRegistry()
    steward.register(StewardCollector())
    body = generate_latest(processes) + generate_latest(steward)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
