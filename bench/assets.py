"""`assets`: the Workflow Service deciding 100,000 assets, with 20 % duplicate callbacks.

100,000 workflow-managed assets (10,000 with --quick) over eight tenants; the
Workflow Service sends one signed callback per asset plus identical duplicates of a
random fifth of them, shuffled.
- accept_per_s: callbacks accepted (202) by `POST /api/v1/assets/workflow-callbacks/`
  through gunicorn as deployed (gunicorn.conf.py: four sync processes; the
  whole middleware stack, signature check, receipt, kick), from concurrent clients in
  other processes. No worker runs meanwhile, so the figure is the web tier's alone.
- accept_worker_cpu_ms: CPU time (user and system, from /proc) gunicorn's workers
  spent per accepted callback meanwhile. On a machine shared with other work it moves
  far less than accept_per_s, which follows whatever else runs.
- apply_per_s: receipts settled by a Celery worker (`--concurrency 2`) started on the
  accepted backlog: from kicking each tenant to no receipt pending. Each callback's
  outcome is recorded, each decision audited and announced in the outbox.
- baseline_apply_per_s: the same conditional UPDATEs (still Requested under the
  instance) issued directly with psycopg, one statement per callback in the same
  order, in transactions of the worker's batch size, two connections in parallel like
  the worker's two processes, on a second set of assets.
- ratio: apply_per_s / baseline_apply_per_s.
- pipelined_baseline_apply_per_s / pipelined_ratio: the same statements sent through
  psycopg's pipelined `executemany` (no round trip per statement), on a third set: the
  floor of the bare UPDATEs, which do a fifth of the worker's writes (no receipt,
  audit entry or event).
- double_applied: assets decided more than once (audit entries or decision events);
  must be 0. `applied`/`ignored` count the receipts' outcomes.
"""

from __future__ import annotations

import http.client
import json
import multiprocessing
import os
import random
import selectors
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psycopg
from django.conf import settings
from django.db import connection
from django.db.models import Count

from apps.assets import services
from apps.assets.models import Asset, WorkflowCallback
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import OutboxEvent
from apps.tenancy.models import AuditEvent, Region, Tenant
from bench.harness import database_url, dsn

ROOT = Path(__file__).resolve().parent.parent
ASSET = Asset._meta.db_table
TENANTS = 8
SECRET = "bench-callback-secret"  # noqa: S105 - the benchmark's own throwaway secret
DUPLICATES = 0.2
CLIENT_PROCESSES = 2
CLIENT_CONNECTIONS = 8  # open at a time, per client process
CALLBACKS = "/api/v1/assets/workflow-callbacks/"


def _fill(tenants, per_tenant: int, label: str) -> list[tuple[str, str]]:
    """Requested assets under a workflow instance; [(tenant id, instance id)]."""
    pairs = []
    for tenant in tenants:
        with tenant_scope(tenant), connection.cursor() as cursor:
            cursor.execute(
                f"""
                INSERT INTO {ASSET} (id, tenant_id, name, description, status,
                    workflow_instance_id, approval_request_id, decided_by, decision_reason,
                    created_at, updated_at)
                SELECT gen_random_uuid(), %s, %s || '-' || g, '', 'requested',
                    gen_random_uuid(), gen_random_uuid(), '', '', now(), now()
                FROM generate_series(1, %s) AS g
                RETURNING workflow_instance_id
                """,  # noqa: S608 - table name only
                [tenant.pk, label, per_tenant],
            )
            pairs += [(str(tenant.pk), str(instance)) for (instance,) in cursor.fetchall()]
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {ASSET}")
    return pairs


def _callbacks(pairs: list, rng: random.Random) -> list[tuple[str, str, str]]:
    """One decision per asset and an identical duplicate for a fifth of them, shuffled:
    [(tenant id, instance id, decision)]."""
    decided = [(t, i, "approve" if rng.random() < 0.8 else "reject") for t, i in pairs]
    calls = decided + rng.sample(decided, int(len(decided) * DUPLICATES))
    rng.shuffle(calls)
    return calls


# --------------------------------------------------------------------------- accepting


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _env(**extra) -> dict:
    return {
        **os.environ,
        "DATABASE_URL": database_url(),
        "STEWARD_LOG_LEVEL": "WARNING",
        "STEWARD_DEBUG": "false",
        "STEWARD_WORKFLOW_CALLBACK_SECRET": SECRET,
        **extra,
    }


def _request(port: int, instance: str, decision: str, n: int) -> bytes:
    """One signed callback as the bytes on the wire (HTTP/1.1, connection closed after)."""
    from apps.eventing.transports import webhook_signature

    body = json.dumps({"workflow_instance_id": instance, "decision": decision}).encode()
    callback_id, stamp = f"bench-{n}", int(time.time())
    signature = webhook_signature(SECRET.encode(), callback_id, stamp, body)
    head = (
        f"POST {CALLBACKS} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n"
        f"webhook-id: {callback_id}\r\nwebhook-timestamp: {stamp}\r\n"
        f"webhook-signature: {signature}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def _client_process(args) -> dict:
    """Send a share of the callbacks over CLIENT_CONNECTIONS connections at a time; {status:
    count}.

    One thread, non-blocking sockets and a selector: the clients share the two cores with
    the server, and the lighter they are the more of the machine the figure is Steward's.
    Threads with blocking sockets were heavier and, waiting for the GIL, were late to
    read an answer and close: gunicorn's worker waits for that close before it takes the
    next request. Each request is signed as it is sent, so none goes stale however long
    the run takes.
    """
    port, calls = args
    statuses: dict = {}
    pending = iter(calls)
    selector = selectors.DefaultSelector()

    def open_next() -> None:
        call = next(pending, None)
        if call is None:
            return
        n, instance, decision = call
        sock = socket.socket()
        sock.setblocking(False)
        sock.connect_ex(("127.0.0.1", port))
        selector.register(sock, selectors.EVENT_WRITE, [_request(port, instance, decision, n), b""])

    for _ in range(CLIENT_CONNECTIONS):
        open_next()
    while selector.get_map():
        ready = selector.select(timeout=60)
        if not ready:
            raise TimeoutError("no answer from gunicorn in a minute")
        for key, _events in ready:
            sock, state = key.fileobj, key.data
            if state[0]:  # connected: send the request (a few hundred bytes: one send)
                if error := sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    raise OSError(error, os.strerror(error))
                sent = sock.send(state[0])
                state[0] = state[0][sent:]
                if not state[0]:
                    selector.modify(sock, selectors.EVENT_READ, state)
                continue
            chunk = sock.recv(65536)
            if chunk:
                state[1] += chunk
                continue
            selector.unregister(sock)
            sock.close()
            status = int(state[1].split(b" ", 2)[1])
            statuses[status] = statuses.get(status, 0) + 1
            open_next()
    return statuses


def _wait_until_serving(port: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("gunicorn exited while starting")
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            conn.request("GET", "/healthz")
            if conn.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("gunicorn did not start within a minute")


def _workers_cpu_s(master: int) -> float:
    """CPU seconds (user and system) used so far by the children of gunicorn's master."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == master:  # fields: state, ppid, …, utime (11), stime (12)
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _accept(calls: list) -> tuple[float, float, dict]:
    port = _free_port()
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    proc = subprocess.Popen(  # noqa: S603
        # Processes and threads from gunicorn.conf.py in ROOT, as the image runs it.
        [gunicorn, "portal.wsgi:application", "-b", f"127.0.0.1:{port}", "--log-level", "warning"],
        cwd=ROOT,
        env=_env(),
    )
    try:
        _wait_until_serving(port, proc)
        numbered = [(n, instance, decision) for n, (_, instance, decision) in enumerate(calls)]
        shares = [(port, numbered[k::CLIENT_PROCESSES]) for k in range(CLIENT_PROCESSES)]
        connection.close()  # the forked clients must not share it
        with multiprocessing.get_context("fork").Pool(CLIENT_PROCESSES) as pool:
            cpu_before = _workers_cpu_s(proc.pid)
            started = time.perf_counter()
            results = pool.map(_client_process, shares)
            elapsed = time.perf_counter() - started
            worker_cpu = _workers_cpu_s(proc.pid) - cpu_before
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    statuses: dict = {}
    for result in results:
        for status, count in result.items():
            statuses[status] = statuses.get(status, 0) + count
    return len(calls) / elapsed, worker_cpu / len(calls), statuses


# --------------------------------------------------------------------------- applying


def _pending() -> int:
    with system_scope():
        return WorkflowCallback.objects.filter(outcome=WorkflowCallback.Outcome.PENDING).count()


def _apply(tenants, total: int) -> float:
    from portal.celery import app

    app.control.purge()  # the kicks queued while accepting: the run starts them itself
    celery = str(Path(sys.executable).parent / "celery")
    proc = subprocess.Popen(  # noqa: S603
        [celery, "-A", "portal", "worker", "-Q", "default", "--concurrency", "2"]
        + ["--loglevel", "WARNING"],
        cwd=ROOT,
        # The dispatcher is the eventing case's business: here the events stay in the
        # outbox, where the run counts them.
        env=_env(STEWARD_KICK_ON_COMMIT="false"),
        stdout=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not app.control.ping(timeout=0.5):
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the Celery worker did not start")
        from apps.core.kick import clear_kick

        for tenant in tenants:
            clear_kick(services.callback_kick_key(tenant.pk))
        started = time.perf_counter()
        for tenant in tenants:
            services.kick_callback_worker(tenant.pk)
        while _pending():
            if time.perf_counter() - started > 600:
                raise RuntimeError("the worker did not settle the callbacks in 10 minutes")
            time.sleep(0.02)
        elapsed = time.perf_counter() - started
    finally:
        proc.terminate()
        proc.wait(timeout=60)
    return total / elapsed


UPDATE = f"""
UPDATE {ASSET} SET status = %s, decided_at = now(), decided_by = 'workflow-service',
    decision_reason = '', updated_at = now()
WHERE workflow_instance_id = %s AND status = 'requested'
"""  # noqa: S608 - table name only


def _baseline(calls: list, batch: int, *, pipelined: bool) -> float:
    by_tenant: dict = {}
    for tenant_id, instance, decision in calls:
        status = "approved" if decision == "approve" else "rejected"
        by_tenant.setdefault(tenant_id, []).append((status, instance))
    tenants = sorted(by_tenant)

    def work(share):
        with psycopg.connect(dsn()) as conn:
            for tenant_id in share:
                rows = by_tenant[tenant_id]
                for start in range(0, len(rows), batch):
                    with conn.transaction(), conn.cursor() as cursor:
                        cursor.execute(
                            "SELECT set_config('steward.tenant_id', %s, true)", [tenant_id]
                        )
                        if pipelined:
                            cursor.executemany(UPDATE, rows[start : start + batch])
                        else:
                            for row in rows[start : start + batch]:
                                cursor.execute(UPDATE, row)

    threads = [threading.Thread(target=work, args=(tenants[k::2],)) for k in range(2)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return len(calls) / (time.perf_counter() - started)


def _double_applied() -> int:
    with system_scope():
        audited = (
            AuditEvent.objects.filter(action__in=["asset.approved", "asset.rejected"])
            .values("object_id")
            .annotate(n=Count("id"))
            .filter(n__gt=1)
            .count()
        )
        announced = (
            OutboxEvent.objects.filter(event_type__in=["AssetApproved", "AssetRejected"])
            .values("aggregate_id")
            .annotate(n=Count("id"))
            .filter(n__gt=1)
            .count()
        )
    return audited + announced


def _say(message: str) -> None:
    print(f"assets: {message}", file=sys.stderr, flush=True)


def run(*, quick: bool) -> dict:
    assets = 10_000 if quick else 100_000
    rng = random.Random(4)  # noqa: S311 - a reproducible workload, not a secret
    region = Region.objects.create(slug="bench-region", name="Bench")
    tenants = [
        Tenant.objects.create(slug=f"bench-{n}", name=f"Bench {n}", home_region=region)
        for n in range(TENANTS)
    ]
    per_tenant = assets // TENANTS
    calls = _callbacks(_fill(tenants, per_tenant, "a"), rng)
    baseline_calls = _callbacks(_fill(tenants, per_tenant, "b"), rng)
    pipelined_calls = _callbacks(_fill(tenants, per_tenant, "c"), rng)

    _say(f"{len(calls)} callbacks for {per_tenant * TENANTS} assets; accepting")
    accept_per_s, worker_cpu_per_callback, statuses = _accept(calls)
    _say(f"accepted {accept_per_s:.0f}/s {statuses}; applying")
    apply_per_s = _apply(tenants, len(calls))
    _say(f"applied {apply_per_s:.0f}/s; baseline")
    batch = settings.STEWARD_WORKFLOW_CALLBACK_BATCH
    baseline_per_s = _baseline(baseline_calls, batch, pipelined=False)
    pipelined_per_s = _baseline(pipelined_calls, batch, pipelined=True)

    with system_scope():
        outcomes = dict(
            WorkflowCallback.objects.values_list("outcome")
            .annotate(n=Count("id"))
            .values_list("outcome", "n")
        )
        still_requested = Asset.objects.filter(name__startswith="a-", status="requested").count()
    return {
        "name": "assets",
        "assets": per_tenant * TENANTS,
        "callbacks": len(calls),
        "accept_per_s": round(accept_per_s, 1),
        "accept_worker_cpu_ms": round(worker_cpu_per_callback * 1000, 3),
        "apply_per_s": round(apply_per_s, 1),
        "baseline_apply_per_s": round(baseline_per_s, 1),
        "ratio": round(apply_per_s / baseline_per_s, 3),
        "pipelined_baseline_apply_per_s": round(pipelined_per_s, 1),
        "pipelined_ratio": round(apply_per_s / pipelined_per_s, 3),
        "double_applied": _double_applied(),
        "applied": outcomes.get("applied", 0),
        "ignored": outcomes.get("ignored", 0),
        "still_requested": still_requested,
        "http_statuses": {str(k): v for k, v in sorted(statuses.items())},
    }
