"""`compute`: one poll cycle over many outstanding links, against the same work in SQL.

1,000,000 outstanding workflow_batch_link rows (100,000 with --quick) over four
tenants, 1 % of them with a terminal batch.
- poll_s: the poller's cycle (apps.compute.services.poll_batch_links until nothing is
  left): read the completion queue in the system scope, reaching batches and links by
  key, then per tenant claim the links with SKIP LOCKED, emit step_completed, delete
  the links and the queue rows.
- baseline_poll_s: the same claim-publish-delete as direct SQL statements (one
  INSERT … SELECT into the outbox and one DELETE per tenant and batch of 500).
- ratio: poll_s / baseline_poll_s (how many times the baseline's time the poll takes).
- index_scan: whether the poll's read reaches batches and links through their keys
  (no sequential scan of either), from EXPLAIN.
"""

from __future__ import annotations

import time

import psycopg
from django.db import connection

from apps.compute import services
from apps.compute.models import BatchCompletion, ComputeBatch, WorkflowBatchLink
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.models import Region, Tenant
from bench.harness import dsn

BATCH = ComputeBatch._meta.db_table
COMPLETION = BatchCompletion._meta.db_table
LINK = WorkflowBatchLink._meta.db_table
TENANTS = 4


def _fill(tenants, per_tenant: int) -> None:
    """Batches and links in bulk; every 100th batch is terminal and queued for
    completion (set A, for the poll), every 100th + 50 terminal but not yet queued
    (set B, for the baseline)."""
    for tenant in tenants:
        with tenant_scope(tenant), connection.cursor() as cursor:
            cursor.execute(
                f"""
                INSERT INTO {BATCH} (id, tenant_id, idempotency_key, workflow_instance_id,
                    workflow_step_id, status, result_summary, created_at, updated_at)
                SELECT gen_random_uuid(), %(tenant)s, 'k-' || g, 'wf-' || (g / 3), 'step-' || g,
                       CASE WHEN g %% 100 IN (0, 50) THEN 'succeeded' ELSE 'running' END,
                       jsonb_build_object('rows', 1, 'set', CASE WHEN g %% 100 = 0 THEN 'A'
                                                                  ELSE 'B' END),
                       now(), now()
                FROM generate_series(1, %(n)s) AS g
                """,  # noqa: S608 - table names only
                {"tenant": tenant.pk, "n": per_tenant},
            )
            cursor.execute(
                f"""
                INSERT INTO {LINK} (batch_id, workflow_step_id, workflow_instance_id,
                                    created_at, tenant_id)
                SELECT id, workflow_step_id, workflow_instance_id, now(), tenant_id
                FROM {BATCH} WHERE tenant_id = %s
                """,  # noqa: S608
                [tenant.pk],
            )
            cursor.execute(
                f"INSERT INTO {COMPLETION} (batch_id, tenant_id, queued_at)"  # noqa: S608
                f" SELECT id, tenant_id, now() FROM {BATCH} WHERE tenant_id = %s"
                " AND status = 'succeeded' AND result_summary->>'set' = 'A'",
                [tenant.pk],
            )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {BATCH}")
        cursor.execute(f"ANALYZE {LINK}")


def _uses_index() -> bool:
    """The poll reads the (small) completion queue and reaches batches and links by
    their primary keys: no sequential scan of either big table."""
    with system_scope(), connection.cursor() as cursor:
        cursor.execute("EXPLAIN " + services.POLL_QUERY, [5000])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    return f"Seq Scan on {LINK}" not in plan and f"Seq Scan on {BATCH}" not in plan


def _poll_cycle() -> tuple[float, int]:
    started = time.perf_counter()
    completed = 0
    while moved := services.poll_batch_links():
        completed += moved
    return time.perf_counter() - started, completed


def _baseline_cycle(tenants) -> tuple[float, int]:
    """Set B turned pending, then claimed, published and deleted in plain SQL."""
    with psycopg.connect(dsn()) as conn:
        for tenant in tenants:
            with conn.transaction():
                conn.execute("SELECT set_config('steward.tenant_id', %s, true)", [str(tenant.pk)])
                conn.execute(
                    f"INSERT INTO {COMPLETION} (batch_id, tenant_id, queued_at)"  # noqa: S608
                    f" SELECT id, tenant_id, now() FROM {BATCH} WHERE tenant_id = %s"
                    " AND status = 'succeeded' AND result_summary->>'set' = 'B'",
                    [tenant.pk],
                )
        started = time.perf_counter()
        completed = 0
        for tenant in tenants:
            while True:
                with conn.transaction():
                    conn.execute(
                        "SELECT set_config('steward.tenant_id', %s, true)", [str(tenant.pk)]
                    )
                    claimed = conn.execute(
                        f"""
                        WITH claimed AS (
                            SELECT l.batch_id, l.workflow_step_id, l.workflow_instance_id,
                                   l.tenant_id, b.status, b.result_summary
                            FROM {COMPLETION} c JOIN {BATCH} b ON b.id = c.batch_id
                            JOIN {LINK} l ON l.batch_id = c.batch_id
                            WHERE c.tenant_id = %(t)s
                            LIMIT 500 FOR UPDATE OF l SKIP LOCKED
                        ), published AS (
                            INSERT INTO eventing_outboxevent (event_id, topic, event_type,
                                schema_version, tenant_id, aggregate_type, aggregate_id, lane,
                                occurred_at, correlation_id, causation_id, payload)
                            SELECT gen_random_uuid(), 'compute.step', 'step_completed', 1,
                                   tenant_id, 'workflow_instance', workflow_instance_id,
                                   abs(hashtext(workflow_instance_id)) %% 16, now(), '', '',
                                   jsonb_build_object(
                                       'workflow_instance_id', workflow_instance_id,
                                       'workflow_step_id', workflow_step_id,
                                       'batch_id', batch_id, 'outcome', status,
                                       'result_summary', result_summary)
                            FROM claimed
                        ), deleted AS (
                            DELETE FROM {LINK} WHERE batch_id IN (SELECT batch_id FROM claimed)
                        )
                        DELETE FROM {COMPLETION} WHERE batch_id IN (SELECT batch_id FROM claimed)
                        """,  # noqa: S608
                        {"t": tenant.pk},
                    ).rowcount
                completed += claimed
                if not claimed:
                    break
        return time.perf_counter() - started, completed


def run(*, quick: bool) -> dict:
    links = 100_000 if quick else 1_000_000
    region = Region.objects.create(slug="bench-compute", name="Bench")
    tenants = [
        Tenant.objects.create(slug=f"bench-c{n}", name=f"Bench {n}", home_region=region)
        for n in range(TENANTS)
    ]
    _fill(tenants, links // TENANTS)
    index_scan = _uses_index()
    poll_s, completed = _poll_cycle()
    baseline_s, baseline_completed = _baseline_cycle(tenants)
    return {
        "name": "compute",
        "outstanding_links": links,
        "terminal_links": completed,
        "poll_s": round(poll_s, 3),
        "baseline_poll_s": round(baseline_s, 3),
        "baseline_terminal_links": baseline_completed,
        "ratio": round(poll_s / baseline_s, 2),
        "index_scan": index_scan,
    }
