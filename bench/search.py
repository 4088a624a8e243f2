"""`search`: the console's search finding assets by the start of their name among 1M.

1,000,000 assets (100,000 with --quick) over eight tenants, named like people name
things (`<word>-<word>-<n>`), seeded with one generate_series INSERT per tenant,
ANALYZEd, the planner's settings as they are.
- search_ms: the median time of `apps.assets.search._named` (exact name, then the
  start of a name in any case, SHOWN rows) in the system scope, as an operator's
  search box runs it, for prefixes of one to many thousand matches.
- baseline_ms: the same two statements written directly with psycopg, in a
  transaction in the system scope (row-level security applies as for Steward).
- ratio: search_ms / baseline_ms.
"""

from __future__ import annotations

import statistics
import time

import psycopg
from django.db import connection

from apps.assets import search as assets_search
from apps.assets import selectors
from apps.assets.models import Asset
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.models import Region, Tenant
from bench.harness import dsn

ASSET = Asset._meta.db_table
TENANTS = 8
WORDS = "acme,bolt,cedar,delta,ember,fjord,gale,harbor,iris,jade,kite,lumen,moss,nova,orbit"
PREFIXES = ("acm", "ACME-B", "kite-o", "nova-moss-12", "zzz", "lumen-jade-4")


def _seed(tenants, per_tenant: int) -> None:
    for tenant in tenants:
        with tenant_scope(tenant), connection.cursor() as cursor:
            cursor.execute(
                f"""
                INSERT INTO {ASSET} (id, tenant_id, name, description, status,
                    decided_by, decision_reason, created_at, updated_at)
                SELECT gen_random_uuid(), %s,
                    w[1 + (g * 7) %% 15] || '-' || w[1 + (g / 15) %% 15] || '-' || g,
                    '', 'draft', '', '', now(), now()
                FROM generate_series(1, %s) AS g, string_to_array(%s, ',') AS w
                """,  # noqa: S608 - table name only
                [tenant.pk, per_tenant, WORDS],
            )
    with connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {ASSET}")


def _median_ms(work, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def _steward(prefix: str):
    def work():
        with system_scope():
            assets_search._named(selectors.asset_list(), prefix)

    return work


def _baseline(conn, prefix: str):
    start, after = prefix.upper(), assets_search._after(prefix.upper())

    def work():
        with conn.transaction(), conn.cursor() as cursor:
            cursor.execute("SELECT set_config('steward.system', 'on', true)")
            cursor.execute(
                f"SELECT a.*, t.* FROM {ASSET} a JOIN tenancy_tenant t ON t.id = a.tenant_id"  # noqa: S608
                " WHERE a.name = %s LIMIT 20",
                [prefix],
            )
            cursor.fetchall()
            cursor.execute(
                f"SELECT a.*, t.* FROM {ASSET} a JOIN tenancy_tenant t ON t.id = a.tenant_id"  # noqa: S608
                " WHERE a.name_folded >= %s AND a.name_folded < %s"
                " ORDER BY a.name_folded, a.id LIMIT 20",
                [start, after],
            )
            cursor.fetchall()

    return work


def run(*, quick: bool) -> dict:
    per_tenant = (100_000 if quick else 1_000_000) // TENANTS
    region = Region.objects.create(slug="bench-region", name="Bench")
    tenants = [
        Tenant.objects.create(slug=f"bench-{n}", name=f"Bench {n}", home_region=region)
        for n in range(TENANTS)
    ]
    started = time.perf_counter()
    _seed(tenants, per_tenant)
    seeded_s = time.perf_counter() - started
    rounds = 30
    with system_scope():
        found = {p: len(assets_search._named(selectors.asset_list(), p)) for p in PREFIXES}
    steward = statistics.median(_median_ms(_steward(p), rounds) for p in PREFIXES)
    with psycopg.connect(dsn()) as conn:
        baseline = statistics.median(_median_ms(_baseline(conn, p), rounds) for p in PREFIXES)
    return {
        "name": "search",
        "assets": per_tenant * TENANTS,
        "seeded_s": round(seeded_s, 1),
        "found": found,
        "search_ms": round(steward, 2),
        "baseline_ms": round(baseline, 2),
        "ratio": round(steward / baseline, 2),
    }
