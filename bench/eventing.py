"""`eventing`: outbox → Redis streams → a Steward consumer, against the same work by hand.

- dispatch_events_per_s: a pre-filled outbox drained by one dispatcher (apps.eventing
  .dispatcher.drain): lane lease, batch read, pipelined XADD, delete under each
  tenant's scope, delivery counts.
- baseline_events_per_s: the floor of the same work written directly with psycopg and
  redis-py: claim a batch with FOR UPDATE SKIP LOCKED, pipelined XADD, DELETE, commit.
- end_to_end_events_per_s: N events emitted by committed transactions (100 per
  transaction) until the last is handled by the `steward.recent-events` consumer,
  with the real processes: a Celery worker kicked on commit, and `run_consumers`.
- raw_end_to_end_events_per_s: the floor of that whole trip, the same work written
  directly with psycopg and redis-py in this process, one stage after the other: the
  same events inserted into the outbox (100 per transaction, in the tenant's scope),
  claimed and XADDed as the dispatch baseline does, read back with XREADGROUP,
  their inbox rows and recent-event rows inserted in one transaction per tenant and
  batch, then XACKed. end_to_end_ratio is Steward's end to end over it.
- median_latency_ms / p95_latency_ms: commit → handled for single events at a light
  load (about 50 a second), from the same processes.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psycopg
from django.conf import settings
from django.db import connection

from apps.core.outbox import NewEvent, emit_many
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import dispatcher
from apps.eventing.models import OutboxEvent, RecentEvent
from apps.eventing.transports import stream_key
from apps.registry.models import Topic
from apps.tenancy.models import Region, Tenant
from bench.harness import database_url, dsn

ROOT = Path(__file__).resolve().parent.parent
CHUNK = 100


def _fill(tenants, topic, count: int) -> None:
    per_tenant = count // len(tenants)
    for tenant in tenants:
        for start in range(0, per_tenant, CHUNK):
            with tenant_scope(tenant):
                emit_many(
                    [
                        NewEvent(
                            topic=topic.name,
                            event_type="bench",
                            aggregate_type="order",
                            aggregate_id=f"{tenant.slug}-{(start + i) % 200}",
                            payload={"n": start + i, "note": "x" * 64},
                            tenant=tenant,
                        )
                        for i in range(min(CHUNK, per_tenant - start))
                    ]
                )


def _outbox_count() -> int:
    with system_scope():
        return OutboxEvent.objects.count()


def _dispatch_rate(tenants, topic, count: int) -> float:
    _fill(tenants, topic, count)
    started = time.perf_counter()
    while _outbox_count():
        dispatcher.drain()
    return count / (time.perf_counter() - started)


_COLUMNS = (
    "id, event_id, topic, event_type, schema_version, tenant_id, aggregate_type,"
    " aggregate_id, occurred_at, correlation_id, causation_id, payload"
)


def _raw_dispatch(conn, client, key: str, tenants) -> None:
    """Claim with FOR UPDATE SKIP LOCKED, pipelined XADD, DELETE, commit: until empty."""
    table = OutboxEvent._meta.db_table
    batch = settings.STEWARD_EVENTING["DISPATCH_BATCH"]
    claim = (
        f"SELECT {_COLUMNS} FROM {table} WHERE tenant_id = %s"  # noqa: S608 - names only
        " ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED"
    )
    pending = [str(t.pk) for t in tenants]
    while pending:
        for tenant_id in list(pending):
            # Row-level security applies to the baseline too: FOR UPDATE needs the
            # owning tenant's scope, so it claims tenant by tenant.
            with conn.transaction():
                conn.execute("SELECT set_config('steward.tenant_id', %s, true)", [tenant_id])
                rows = conn.execute(claim, [tenant_id, batch]).fetchall()
                if not rows:
                    pending.remove(tenant_id)
                    continue
                pipe = client.pipeline(transaction=False)
                for row in rows:
                    envelope = {
                        "event_id": str(row[1]),
                        "topic": row[2],
                        "event_type": row[3],
                        "schema_version": row[4],
                        "tenant_id": str(row[5]),
                        "aggregate_type": row[6],
                        "aggregate_id": row[7],
                        "occurred_at": row[8].isoformat(),
                        "correlation_id": row[9],
                        "causation_id": row[10],
                        "payload": row[11],
                    }
                    fields = {
                        "envelope": json.dumps(envelope),
                        "event_id": envelope["event_id"],
                        "event_type": envelope["event_type"],
                    }
                    pipe.xadd(key, fields)
                pipe.execute()
                conn.execute(
                    f"DELETE FROM {table} WHERE id = ANY(%s)",  # noqa: S608
                    [[row[0] for row in rows]],
                )


def _baseline_rate(tenants, topic, count: int) -> float:
    _fill(tenants, topic, count)
    with psycopg.connect(dsn()) as conn:
        started = time.perf_counter()
        _raw_dispatch(conn, get_redis(), stream_key(topic.name), tenants)
        return count / (time.perf_counter() - started)


def _raw_fill(conn, tenants, topic, count: int) -> None:
    """What emit_many writes: the outbox rows, 100 per transaction in the tenant's scope."""
    insert = (
        f"INSERT INTO {OutboxEvent._meta.db_table} (event_id, topic, event_type,"  # noqa: S608
        " schema_version, tenant_id, aggregate_type, aggregate_id, lane, occurred_at,"
        " correlation_id, causation_id, payload)"
        " SELECT gen_random_uuid(), %s, 'bench', 1, %s, 'order', a, hashtext(a) & 15, now(),"
        " '', '', jsonb_build_object('n', n, 'note', %s::text)"
        " FROM unnest(%s::text[], %s::int[]) AS u(a, n)"
    )
    per_tenant = count // len(tenants)
    for tenant in tenants:
        for start in range(0, per_tenant, CHUNK):
            numbers = list(range(start, min(start + CHUNK, per_tenant)))
            with conn.transaction():
                conn.execute("SELECT set_config('steward.tenant_id', %s, true)", [str(tenant.pk)])
                conn.execute(
                    insert,
                    [
                        topic.name,
                        tenant.pk,
                        "x" * 64,
                        [f"{tenant.slug}-{n % 200}" for n in numbers],
                        numbers,
                    ],
                )


def _raw_consume(conn, client, key: str, count: int) -> None:
    """XREADGROUP a batch, insert its inbox and recent-event rows per tenant in one
    transaction (skipping inbox duplicates, as Steward's inbox does), XACK."""
    group, consumer_name = f"raw-{uuid.uuid4().hex[:8]}", "raw"
    client.xgroup_create(key, group, id="0", mkstream=True)
    inbox = (
        "INSERT INTO eventing_inboxentry (consumer, event_id, tenant_id, handled_at)"
        " SELECT %s, e, %s, now() FROM unnest(%s::uuid[]) AS e"
        " ON CONFLICT (consumer, event_id) DO NOTHING RETURNING event_id"
    )
    recent = (
        "INSERT INTO eventing_recentevent (event_id, topic, event_type, tenant_id,"
        " aggregate_type, aggregate_id, occurred_at, received_at)"
        " SELECT e, t, y, %s, at, ai, o, now()"
        " FROM unnest(%s::uuid[], %s::text[], %s::text[], %s::text[], %s::text[],"
        " %s::timestamptz[]) AS u(e, t, y, at, ai, o) WHERE e = ANY(%s::uuid[])"
    )
    batch = settings.STEWARD_EVENTING.get("CONSUMER_BATCH", 100)
    handled = 0
    try:
        while handled < count:
            response = client.xreadgroup(group, consumer_name, {key: ">"}, count=batch, block=1000)
            if not response:
                raise RuntimeError("the raw consumer ran out of entries")
            entries = response[0][1]
            groups: dict = {}
            for _, fields in entries:
                envelope = json.loads(fields[b"envelope"])
                groups.setdefault(envelope["tenant_id"], []).append(envelope)
            with conn.transaction():
                for tenant_id, envelopes in groups.items():
                    conn.execute("SELECT set_config('steward.tenant_id', %s, true)", [tenant_id])
                    ids = [e["event_id"] for e in envelopes]
                    new = [r[0] for r in conn.execute(inbox, ["raw", tenant_id, ids]).fetchall()]
                    conn.execute(
                        recent,
                        [
                            tenant_id,
                            ids,
                            [e["topic"] for e in envelopes],
                            [e["event_type"] for e in envelopes],
                            [e["aggregate_type"] for e in envelopes],
                            [e["aggregate_id"] for e in envelopes],
                            [e["occurred_at"] for e in envelopes],
                            new,
                        ],
                    )
            client.xack(key, group, *[entry_id for entry_id, _ in entries])
            handled += len(entries)
    finally:
        client.xgroup_destroy(key, group)


def _raw_end_to_end(tenants, topic, count: int) -> float:
    client = get_redis()
    key = stream_key(topic.name)
    client.delete(key)
    with psycopg.connect(dsn()) as conn:
        started = time.perf_counter()
        _raw_fill(conn, tenants, topic, count)
        _raw_dispatch(conn, client, key, tenants)
        _raw_consume(conn, client, key, count)
        return count / (time.perf_counter() - started)


class Processes:
    """A Celery worker and the consumers process on the scratch database."""

    def __init__(self):
        env = {**os.environ, "DATABASE_URL": database_url(), "STEWARD_LOG_LEVEL": "WARNING"}
        celery = str(Path(sys.executable).parent / "celery")
        self.procs = [
            subprocess.Popen(  # noqa: S603
                [
                    celery,
                    "-A",
                    "portal",
                    "worker",
                    "-Q",
                    "default",
                    "--concurrency",
                    "2",
                    "--loglevel",
                    "WARNING",
                ],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),
            subprocess.Popen(  # noqa: S603
                [sys.executable, "manage.py", "run_consumers"],
                cwd=ROOT,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            ),
        ]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()


def _handled(ids=None) -> int:
    with system_scope():
        qs = RecentEvent.objects.all()
        return qs.filter(event_id__in=ids).count() if ids is not None else qs.count()


def _wait_until(condition, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("the bench timed out waiting for the consumers")
        time.sleep(0.005)


def _warm_up(tenant, topic) -> None:
    """Until an event makes it through, the processes are still starting."""
    probe = NewEvent(
        topic=topic.name,
        event_type="warm-up",
        aggregate_type="probe",
        aggregate_id="0",
        payload={},
        tenant=tenant,
    )
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        with tenant_scope(tenant):
            [envelope] = emit_many([probe])
        try:
            _wait_until(lambda e=envelope: _handled([e.event_id]) == 1, timeout=3)
            return
        except RuntimeError:
            continue
    raise RuntimeError("the worker and consumers never started")


def _end_to_end(tenants, topic, count: int) -> float:
    before = _handled()
    started = time.perf_counter()
    _fill(tenants, topic, count)
    _wait_until(lambda: _handled() - before >= count, timeout=300)
    return count / (time.perf_counter() - started)


def _latencies(tenant, topic, samples: int) -> list[float]:
    latencies = []
    for n in range(samples):
        with tenant_scope(tenant):
            [envelope] = emit_many(
                [
                    NewEvent(
                        topic=topic.name,
                        event_type="latency",
                        aggregate_type="probe",
                        aggregate_id=str(n % 10),
                        payload={"n": n},
                        tenant=tenant,
                    )
                ]
            )
        committed = time.time()
        _wait_until(lambda e=envelope: _handled([e.event_id]) == 1, timeout=30)
        with system_scope():
            handled_at = RecentEvent.objects.get(event_id=envelope.event_id).received_at
        latencies.append((handled_at.timestamp() - committed) * 1000)
        time.sleep(0.02)
    return latencies


def run(*, quick: bool) -> dict:
    count = 5_000 if quick else 20_000
    samples = 50 if quick else 200
    region = Region.objects.create(slug="bench-eventing", name="Bench")
    tenants = [
        Tenant.objects.create(slug=f"bench-e{n}", name=f"Bench {n}", home_region=region)
        for n in range(4)
    ]
    topic = Topic.objects.create(name=f"bench.t{uuid.uuid4().hex[:8]}")
    client = get_redis()
    original = settings.STEWARD_EVENTING
    try:
        settings.STEWARD_EVENTING = {**original, "KICK_ON_COMMIT": False}
        dispatch = _dispatch_rate(tenants, topic, count)
        client.delete(stream_key(topic.name))
        baseline = _baseline_rate(tenants, topic, count)
        client.delete(stream_key(topic.name))
        raw_end_to_end = _raw_end_to_end(tenants, topic, count)
        client.delete(stream_key(topic.name))

        settings.STEWARD_EVENTING = {**original, "KICK_ON_COMMIT": True}
        connection.close()
        with Processes():
            _warm_up(tenants[0], topic)
            end_to_end = _end_to_end(tenants, topic, count)
            latencies = sorted(_latencies(tenants[0], topic, samples))
    finally:
        settings.STEWARD_EVENTING = original
        client.delete(stream_key(topic.name))
    return {
        "name": "eventing",
        "events": count,
        "end_to_end_events_per_s": round(end_to_end, 1),
        "raw_end_to_end_events_per_s": round(raw_end_to_end, 1),
        "end_to_end_ratio": round(end_to_end / raw_end_to_end, 3),
        "dispatch_events_per_s": round(dispatch, 1),
        "baseline_events_per_s": round(baseline, 1),
        "ratio": round(dispatch / baseline, 3),
        "median_latency_ms": round(statistics.median(latencies), 1),
        "p95_latency_ms": round(latencies[int(len(latencies) * 0.95) - 1], 1),
        "latency_samples": len(latencies),
    }
