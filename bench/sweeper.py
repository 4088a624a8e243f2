"""`sweeper`: the nightly retention sweep over Steward's own tables, against a plain
batched DELETE, with API reads running meanwhile.

3,000,000 rows (300,000 with --quick) in Steward's expirable tables over eight tenants
— inbox entries (2/3), recent events and stored Idempotency-Key answers (1/6 each) —
of which a third are past their window.
- rows_per_s: rows purged per second by `retention_services.sweep_run` (the whole
  nightly sweep: plan, owners, adaptive batches in each tenant's scope, the record).
- max_lock_ms: the longest batch transaction, i.e. the longest any row lock was held.
- baseline_rows_per_s: the same rows (refilled) deleted directly with psycopg: one
  statement per batch of 5,000 claimed with SKIP LOCKED, tenant by tenant under the same
  row-level security, autocommit per batch, with the same API reads running meanwhile
  (their p99 is `p99_during_baseline_ms`).
- ratio: rows_per_s / baseline_rows_per_s.
- p99_without_ms / p99_during_ms: p99 latency of `GET /api/v1/eventing/recent-events/`
  (a platform token, through the whole stack) issued back to back from another process
  (as the web tier is apart from the Celery worker that sweeps), with
  no sweep running and while the sweep runs, after 30 unmeasured warm-up reads. Recent
  events are one of the swept tables. The filled tables are vacuumed and analysed
  before anything is measured.
"""

from __future__ import annotations

import multiprocessing
import statistics
import time
from datetime import timedelta

import psycopg
from django.conf import settings
from django.db import connection
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.core.models import IdempotencyRecord
from apps.core.scope import tenant_scope
from apps.core.setup import SetupReport
from apps.eventing.models import InboxEntry, RecentEvent
from apps.governance.install import install_reference_data
from apps.governance.retention import services as retention_services
from apps.tenancy import services
from apps.tenancy.models import Region, Tenant
from bench.harness import database_url, dsn
from bench.readers import read_api

TENANTS = 8
INBOX = InboxEntry._meta.db_table
RECENT = RecentEvent._meta.db_table
IDEMPOTENCY = IdempotencyRecord._meta.db_table
BASELINE_BATCH = 5000
READS_WITHOUT = 300


def _fill(tenants, total: int, as_of, *, expired_only: bool = False) -> int:
    """`total` rows, a third expired at `as_of` (only the expired third with
    `expired_only`); returns the number of expired rows written."""
    inbox_hours = settings.STEWARD_EVENTING["INBOX_RETENTION_HOURS"]
    inbox_cut = as_of - timedelta(hours=inbox_hours)
    ttl_cut = as_of - settings.STEWARD_IDEMPOTENCY_TTL
    per_tenant_inbox = total * 2 // 3 // len(tenants)
    per_tenant_recent = total // 6 // len(tenants)
    expired = 0
    parts = [("old", 1)] if expired_only else [("old", 1), ("new", 2)]
    for label, share in parts:
        older = label == "old"
        for tenant in tenants:
            n_inbox = per_tenant_inbox * share // 3
            n_recent = per_tenant_recent * share // 3
            with tenant_scope(tenant), connection.cursor() as cursor:
                cursor.execute(
                    f"""
                    INSERT INTO {INBOX} (consumer, event_id, tenant_id, handled_at)
                    SELECT 'bench.consumer', gen_random_uuid(), %(t)s,
                           %(cut)s::timestamptz + (CASE WHEN %(old)s THEN -1 ELSE 1 END)
                               * (interval '1 second' * (1 + g %% 3600))
                    FROM generate_series(1, %(n)s) AS g
                    """,  # noqa: S608 - table names only
                    {"t": tenant.pk, "cut": inbox_cut, "old": older, "n": n_inbox},
                )
                cursor.execute(
                    f"""
                    INSERT INTO {RECENT} (event_id, topic, event_type, tenant_id,
                        aggregate_type, aggregate_id, occurred_at, received_at)
                    SELECT gen_random_uuid(), 'bench.topic', 'BenchHappened', %(t)s,
                           'bench', g::text, %(cut)s::timestamptz,
                           %(cut)s::timestamptz + (CASE WHEN %(old)s THEN -1 ELSE 1 END)
                               * (interval '1 second' * (1 + g %% 3600))
                    FROM generate_series(1, %(n)s) AS g
                    """,  # noqa: S608
                    {"t": tenant.pk, "cut": inbox_cut, "old": older, "n": n_recent},
                )
            if older:
                expired += n_inbox + n_recent
        n_keys = total // 6 * share // 3
        with connection.cursor() as cursor:
            cursor.execute(
                f"""
                INSERT INTO {IDEMPOTENCY} (caller, key, method, path, request_digest,
                    status_code, response_body, response_headers, created_at)
                SELECT 'bench:' || %(label)s, md5(random()::text) || g, 'POST', '/api/v1/x/',
                       md5(g::text), 201, '{{}}'::jsonb, '{{}}'::jsonb,
                       %(cut)s::timestamptz + (CASE WHEN %(old)s THEN -1 ELSE 1 END)
                           * (interval '1 second' * (1 + g %% 3600))
                FROM generate_series(1, %(n)s) AS g
                """,  # noqa: S608
                {
                    "label": f"{label}-{time.monotonic_ns()}",
                    "cut": ttl_cut,
                    "old": older,
                    "n": n_keys,
                },
            )
        if older:
            expired += n_keys
    with connection.cursor() as cursor:
        # Settled before measuring, so autovacuum does not pick the fresh rows up then.
        for table in (INBOX, RECENT, IDEMPOTENCY):
            cursor.execute(f"VACUUM ANALYZE {table}")
    return expired


class Reader:
    """Runs `read_api` in a spawned process; `latencies` and `failures` once joined."""

    def __init__(self, secret: str, limit: int | None = None):
        context = multiprocessing.get_context("spawn")
        self.ready, self.stop = context.Event(), context.Event()
        self.receive, send = context.Pipe(duplex=False)
        self.process = context.Process(
            target=read_api,
            args=(database_url(), secret, limit, self.ready, self.stop, send),
            daemon=True,
        )
        self.latencies: list[float] = []
        self.failures = 0

    def start(self) -> None:
        self.process.start()
        if not self.ready.wait(120):
            raise RuntimeError("the reader process did not start")

    def join(self) -> None:
        self.stop.set()
        self.latencies, self.failures = self.receive.recv()
        self.process.join(30)


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else 0.0


def _baseline(tenants, as_of) -> tuple[int, float]:
    """Delete the refilled expired rows directly: batches of BASELINE_BATCH claimed with
    SKIP LOCKED, each its own transaction in the owning tenant's scope."""
    inbox_cut = as_of - timedelta(hours=settings.STEWARD_EVENTING["INBOX_RETENTION_HOURS"])
    ttl_cut = as_of - settings.STEWARD_IDEMPOTENCY_TTL
    jobs = [(INBOX, "handled_at", inbox_cut, t.pk) for t in tenants]
    jobs += [(RECENT, "received_at", inbox_cut, t.pk) for t in tenants]
    jobs += [(IDEMPOTENCY, "created_at", ttl_cut, None)]
    deleted = 0
    with psycopg.connect(dsn(), autocommit=True) as conn:
        started = time.perf_counter()
        for table, column, cut, tenant in jobs:
            owned = " AND tenant_id = %(t)s" if tenant else ""
            while True:
                with conn.transaction():
                    if tenant:
                        conn.execute(
                            "SELECT set_config('steward.tenant_id', %s, true)", [str(tenant)]
                        )
                    count = conn.execute(
                        f"WITH batch AS MATERIALIZED (SELECT id FROM {table}"  # noqa: S608
                        f" WHERE {column} < %(cut)s{owned} LIMIT {BASELINE_BATCH}"
                        " FOR UPDATE SKIP LOCKED)"
                        f" DELETE FROM {table} WHERE id = ANY(ARRAY(SELECT id FROM batch))",
                        {"cut": cut, "t": tenant},
                    ).rowcount
                deleted += count
                if count < BASELINE_BATCH:
                    break
        return deleted, time.perf_counter() - started


def run(*, quick: bool) -> dict:
    total = 300_000 if quick else 3_000_000
    region = Region.objects.create(slug="bench-sweeper", name="Bench")
    tenants = [
        Tenant.objects.create(slug=f"bench-s{n}", name=f"Bench {n}", home_region=region)
        for n in range(TENANTS)
    ]
    account = services.service_account_create(actor=SYSTEM_ACTOR, name="bench-reader")
    issued = services.api_token_issue(
        actor=SYSTEM_ACTOR, service_account=account, name="bench", scopes=["eventing:read"]
    )
    # Steward's tables are decided by the rules set-up installs from the settings.
    install_reference_data(SetupReport())
    as_of = timezone.now()
    filled_started = time.perf_counter()
    expired = _fill(tenants, total, as_of)
    fill_s = time.perf_counter() - filled_started

    alone = Reader(issued.secret, limit=READS_WITHOUT // (3 if quick else 1))
    alone.start()
    alone.process.join()  # it stops by itself after its reads
    alone.join()

    during = Reader(issued.secret)
    during.start()
    started = time.perf_counter()
    sweep = retention_services.sweep_run(now=as_of)
    sweep_s = time.perf_counter() - started
    during.join()
    purged = sweep.results["rows_purged"]

    _fill(tenants, total, as_of, expired_only=True)
    # The baseline deletes under the same concurrent reads as the sweep did.
    beside_baseline = Reader(issued.secret)
    beside_baseline.start()
    baseline_rows, baseline_s = _baseline(tenants, as_of)
    beside_baseline.join()

    rows_per_s = purged / sweep_s
    baseline_per_s = baseline_rows / baseline_s
    return {
        "name": "sweeper",
        "rows": total,
        "expired_rows": expired,
        "rows_purged": purged,
        "sweep_s": round(sweep_s, 2),
        "rows_per_s": round(rows_per_s),
        "batches": sweep.results["batches"],
        "max_lock_ms": sweep.results["max_lock_ms"],
        "baseline_rows": baseline_rows,
        "baseline_rows_per_s": round(baseline_per_s),
        "ratio": round(rows_per_s / baseline_per_s, 3),
        "p99_without_ms": round(p99(alone.latencies), 1),
        "p99_during_ms": round(p99(during.latencies), 1),
        "p99_during_baseline_ms": round(p99(beside_baseline.latencies), 1),
        "median_without_ms": round(statistics.median(alone.latencies), 1),
        "median_during_ms": round(statistics.median(during.latencies or [0]), 1),
        "reads_without": len(alone.latencies),
        "reads_during": len(during.latencies),
        "read_failures": alone.failures + during.failures,
        "fill_s": round(fill_s, 1),
        "tables": {
            label: {
                key: table[key]
                for key in (
                    "rows",
                    "batches",
                    "max_lock_ms",
                    "longest_batch_rows",
                    "lookup_ms",
                    "duration_ms",
                )
            }
            for label, table in sweep.results["tables"].items()
            if table["rows"]
        },
    }
