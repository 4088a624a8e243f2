"""`load`: the main list endpoints under concurrent load, as deployed, with a big dataset.

1,000,000 assets over ten tenants (a tenth of them waiting on the Workflow Service)
and 100,000 events waiting in the outbox (100,000 / 10,000 with --quick). gunicorn
serves as docker-compose deploys it (gunicorn.conf.py); wrk (Debian's `wrk`,
installed when missing and run as root) drives each endpoint from two threads and 16
connections on the same machine, so client and server share the two cores.

For each endpoint: requests/s and p50/p95/p99 latency (ms), and non-2xx answers
(must be 0). Then `api_assets_one_client`: the API's asset list (a page of 50) from one
connection alone, whose p50 is what one request costs with nothing queued before it;
and `web_rss_mb`: each gunicorn process's resident memory once the load is over.
baseline_rps is /healthz in the same run (the stack's floor: no
authentication, no query), and each endpoint's ratio is its requests/s over it.

The API is read with a platform service's token (system scope: all ten tenants), and
its asset list also with one tenant's own service token; the console's asset list
with a tenant admin's session (one tenant's rows), its eventing overview (the outbox
backlog among it) with an operator's. API rate limiting is
lifted for the run (STEWARD_API_RATE), as it would be for a trusted load test.

Each endpoint also reports `machine_ms`: the CPU time its run took in each kind of
process (the gunicorn workers, PostgreSQL's, Redis's, wrk's) divided by the requests
it served, and `cpu_ratio`, /healthz's machine time per request over the endpoint's.
With both cores busy, requests/s is the cores' time over the machine time a request
takes, so on a quiet machine the two ratios agree. On a shared one a neighbour's burst
moved requests/s by half between runs of the same tree; a process's CPU time counts
neither the neighbour's work nor the time the hypervisor gives elsewhere (steal), so
`cpu_ratio` is the estimate a neighbour moves least. PostgreSQL's
and Redis's processes are read from /proc, so a server on another machine reads as
null and is left out of the sum.
"""

from __future__ import annotations

import http.client
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore
from django.db import connection

from apps.assets.models import Asset
from apps.core.context import SYSTEM_ACTOR
from apps.core.redis import get_redis
from apps.eventing.models import OutboxEvent
from apps.tenancy import services
from apps.tenancy.models import Region, Tenant
from bench.assets import _free_port, _wait_until_serving
from bench.harness import database_url

ROOT = Path(__file__).resolve().parent.parent
TENANTS = 10

ENDPOINTS = [
    ("api_assets", "/api/v1/assets/assets/", "token"),
    ("api_assets_waiting", "/api/v1/assets/assets/?workflow_managed=true", "token"),
    ("api_assets_approved", "/api/v1/assets/assets/?status=approved", "token"),
    ("api_assets_one_tenant", "/api/v1/assets/assets/", "tenant_token"),
    ("api_tenants", "/api/v1/tenancy/tenants/", "token"),
    ("api_recent_events", "/api/v1/eventing/recent-events/", "token"),
    ("console_assets", "/assets/", "admin"),
    ("console_eventing", "/eventing/", "operator"),
]

# wrk's summary as one JSON line; latencies in microseconds.
REPORT = """
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests": %d, "duration_us": %d, "errors": %d, "non_2xx": %d, '
    .. '"p50": %d, "p95": %d, "p99": %d}\\n',
    summary.requests, summary.duration, e.connect + e.read + e.write + e.timeout,
    e.status, latency:percentile(50), latency:percentile(95), latency:percentile(99)))
end
"""


def _wrk() -> str:
    found = shutil.which("wrk")
    if found:
        return found
    if os.geteuid() == 0:
        subprocess.run(  # noqa: S603
            ["apt-get", "install", "-y", "-qq", "wrk"],  # noqa: S607
            check=True,
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"},
            stdout=subprocess.DEVNULL,
        )
        return shutil.which("wrk") or "wrk"
    raise SystemExit(
        "The load case needs wrk: install Debian's package with `apt-get install wrk`."
    )


def _seed(assets: int, events: int) -> tuple[dict, dict]:
    region = Region.objects.get_or_create(slug="load-region", defaults={"name": "Load"})[0]
    tenants = Tenant.objects.bulk_create(
        Tenant(slug=f"load-{n:02d}", name=f"Load {n}", home_region=region) for n in range(TENANTS)
    )
    per_tenant = assets // TENANTS
    with connection.cursor() as cursor:
        cursor.execute("SELECT set_config('steward.system', 'on', false)")
        for tenant in tenants:
            cursor.execute("SELECT set_config('steward.tenant_id', %s, false)", [str(tenant.pk)])
            cursor.execute(
                f"""
                INSERT INTO {Asset._meta.db_table} (id, tenant_id, name, description, status,
                    workflow_instance_id, approval_request_id, decided_by, decision_reason,
                    created_at, updated_at)
                SELECT gen_random_uuid(), %s, 'asset-' || g, '',
                    (ARRAY['draft','requested','approved','rejected','retired'])[1 + g %% 5],
                    CASE WHEN g %% 10 = 1 THEN gen_random_uuid() END, NULL, '', '',
                    now() - (g || ' seconds')::interval, now()
                FROM generate_series(1, %s) AS g
                """,  # noqa: S608 - table name only
                [tenant.pk, per_tenant],
            )
            cursor.execute(
                f"""
                INSERT INTO {OutboxEvent._meta.db_table} (event_id, topic, event_type,
                    schema_version, tenant_id, aggregate_type, aggregate_id, lane,
                    occurred_at, correlation_id, causation_id, payload)
                SELECT gen_random_uuid(), 'assets.asset', 'AssetApproved', 1, %s,
                    'assets.asset', 'a' || g, g %% 16, now(), 'load', '', '{{}}'::jsonb
                FROM generate_series(1, %s) AS g
                """,  # noqa: S608 - table name only
                [tenant.pk, events // TENANTS],
            )
        cursor.execute("SELECT set_config('steward.tenant_id', '', false)")
        cursor.execute("SELECT set_config('steward.system', '', false)")
        # VACUUM as well: autovacuum would, a minute after a bulk insert this size, and
        # until it has, counts read the heap instead of the index alone. Left to
        # autovacuum, it happened in the middle of some runs and not others.
        cursor.execute(f"VACUUM ANALYZE {Asset._meta.db_table}")
        cursor.execute(f"VACUUM ANALYZE {OutboxEvent._meta.db_table}")
    account = services.service_account_create(actor=SYSTEM_ACTOR, name="load")
    token = services.api_token_issue(
        actor=SYSTEM_ACTOR,
        service_account=account,
        name="load",
        scopes=["assets:read", "tenancy:read", "eventing:read"],
    ).secret
    # A tenant's own service: its scope is one tenant's rows (a tenth of them).
    tenant_account = services.service_account_create(
        actor=SYSTEM_ACTOR, name="load-tenant", tenant=tenants[0]
    )
    tenant_token = services.api_token_issue(
        actor=SYSTEM_ACTOR, service_account=tenant_account, name="load", scopes=["assets:read"]
    ).secret
    admin = services.user_create(actor=SYSTEM_ACTOR, username="load-admin", password="x" * 20)
    services.membership_set(actor=SYSTEM_ACTOR, tenant=tenants[0], user=admin, role="admin")
    operator = services.user_create(
        actor=SYSTEM_ACTOR, username="load-operator", password="x" * 20, is_operator=True
    )
    return {"token": token, "tenant_token": tenant_token}, {
        "admin": _session(admin),
        "operator": _session(operator, code_given=True),
    }


def _session(user, *, code_given: bool = False) -> str:
    """A signed-in console session, as the login page would leave it. Operators reach
    nothing but enrolment without a second factor: theirs gave one."""
    from apps.console.twofactor import mark_verified

    session = SessionStore()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = settings.AUTHENTICATION_BACKENDS[0]
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    if code_given:
        mark_verified(session)
    session.save()
    return session.session_key


def _check_answers(port: int, path: str, header: str) -> None:
    """wrk counts only 4xx and 5xx as failures: a redirect (to sign-in, to two-factor
    enrolment) would be measured as if it were the page."""
    name, _, value = header.partition(": ")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request("GET", path, headers={name: value} if header else {})
        status = conn.getresponse().status
    finally:
        conn.close()
    if status != 200:
        raise RuntimeError(f"{path} answered {status}, not the page")


def _drive(wrk: str, url: str, header: str, seconds: int, *, connections: int = 16) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(REPORT)
    threads = min(2, connections)
    try:
        answer = subprocess.run(  # noqa: S603
            [wrk, f"-t{threads}", f"-c{connections}", f"-d{seconds}s", "-s", script.name]
            + (["-H", header] if header else [])
            + [url],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        os.unlink(script.name)
    summary = json.loads(answer.stdout.strip().splitlines()[-1])
    return {
        "requests": summary["requests"],
        "rps": round(summary["requests"] / (summary["duration_us"] / 1e6), 1),
        "p50_ms": round(summary["p50"] / 1000, 1),
        "p95_ms": round(summary["p95"] / 1000, 1),
        "p99_ms": round(summary["p99"] / 1000, 1),
        "non_2xx": summary["non_2xx"],
        "errors": summary["errors"],
    }


_TICK = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pids) -> float:
    """User and system CPU time of these processes, those that are still there."""
    spent = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        spent += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15)
    return spent / _TICK


def _children(master: int) -> list[str]:
    return Path(f"/proc/{master}/task/{master}/children").read_text().split()


def _server_pids() -> dict[str, list[int] | None]:
    """PostgreSQL's processes (every backend and helper it lists) and Redis's, when
    they run on this machine; None for a server this machine's /proc does not show."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity")
        postgres = [pid for (pid,) in cursor.fetchall() if Path(f"/proc/{pid}").exists()]
    redis_pid = get_redis().info("server").get("process_id")
    redis = [redis_pid] if redis_pid and Path(f"/proc/{redis_pid}").exists() else []
    return {"postgres": postgres or None, "redis": redis or None}


class _MachineTime:
    """The CPU time one endpoint's run took, by kind of process, per request served."""

    def __init__(self, master: int):
        self.master = master

    def __enter__(self):
        self.pids = {"web": _children(self.master), **_server_pids()}
        self.before = {kind: _cpu_seconds(p or ()) for kind, p in self.pids.items()}
        self.wrk_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        return self

    def __exit__(self, *exc):
        # pg_stat_activity again: connections the pool opened during the run count too
        servers = _server_pids()
        for kind in ("postgres", "redis"):
            if self.pids[kind] is not None and servers[kind] is not None:
                self.pids[kind] = sorted(set(self.pids[kind]) | set(servers[kind]))
        self.after = {kind: _cpu_seconds(p or ()) for kind, p in self.pids.items()}
        wrk = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.wrk = (wrk.ru_utime - self.wrk_before.ru_utime) + (
            wrk.ru_stime - self.wrk_before.ru_stime
        )

    def per_request(self, requests: int) -> dict:
        spent = {
            kind: None if self.pids[kind] is None else self.after[kind] - self.before[kind]
            for kind in self.pids
        }
        spent["wrk"] = self.wrk
        shares = {k: None if v is None else round(v * 1000 / requests, 3) for k, v in spent.items()}
        shares["total"] = round(sum(v for v in shares.values() if v is not None), 3)
        return shares


def _web_rss_mb(master: int) -> list[float]:
    """Resident memory of each gunicorn worker (the master's children), in MB."""
    sizes = []
    for pid in _children(master):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                sizes.append(round(int(line.split()[1]) / 1024, 1))
    return sizes


def run(*, quick: bool) -> dict:
    wrk = _wrk()
    assets, events = (100_000, 10_000) if quick else (1_000_000, 100_000)
    seconds = 5 if quick else 15
    started = time.monotonic()
    tokens, sessions = _seed(assets, events)
    print(
        f"load: seeded {assets} assets, {events} events in {time.monotonic() - started:.0f} s",
        file=sys.stderr,
    )
    port = _free_port()
    env = {
        **os.environ,
        "DATABASE_URL": database_url(),
        "STEWARD_LOG_LEVEL": "WARNING",
        "STEWARD_DEBUG": "false",
        "STEWARD_API_RATE": "100000000/min",
        "STEWARD_KICK_ON_COMMIT": "false",
    }
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    proc = subprocess.Popen(  # noqa: S603
        # Processes and threads from gunicorn.conf.py, as deployed.
        [gunicorn, "portal.wsgi:application", "-b", f"127.0.0.1:{port}", "--log-level", "warning"],
        cwd=ROOT,
        env=env,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_until_serving(port, proc)
        with _MachineTime(proc.pid) as spent:
            baseline = _drive(wrk, f"{base}/healthz", "", seconds)
        baseline["machine_ms"] = spent.per_request(baseline["requests"])
        figures = {}
        for name, path, caller in ENDPOINTS:
            header = (
                f"Authorization: Bearer {tokens[caller]}"
                if caller in tokens
                else f"Cookie: {settings.SESSION_COOKIE_NAME}={sessions[caller]}"
            )
            _check_answers(port, path, header)
            with _MachineTime(proc.pid) as spent:
                figures[name] = _drive(wrk, base + path, header, seconds)
            figures[name]["ratio"] = round(figures[name]["rps"] / baseline["rps"], 3)
            figures[name]["machine_ms"] = spent.per_request(figures[name]["requests"])
            figures[name]["cpu_ratio"] = round(
                baseline["machine_ms"]["total"] / figures[name]["machine_ms"]["total"], 3
            )
            print(f"load: {name} {figures[name]}", file=sys.stderr)
        one = f"Authorization: Bearer {tokens['token']}"
        alone = _drive(
            wrk, f"{base}/api/v1/assets/assets/?page_size=50", one, seconds, connections=1
        )
        print(f"load: api_assets_one_client {alone}", file=sys.stderr)
        rss = _web_rss_mb(proc.pid)
        print(f"load: web_rss_mb {rss}", file=sys.stderr)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return {
        "name": "load",
        "assets": assets,
        "outbox_events": events,
        "web": "gunicorn.conf.py (4 sync processes)",
        "seconds_per_endpoint": seconds,
        "baseline_rps": baseline["rps"],
        "baseline": baseline,
        "endpoints": figures,
        "api_assets_one_client": alone,
        "web_rss_mb": rss,
    }
