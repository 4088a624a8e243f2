"""`search`: the console's search finding assets by name among 1M: exact, by its start,
and by likeness (a typo).

1,000,000 assets (100,000 with --quick) over eight tenants, named like people name
things (`<word>-<word>-<n>`), seeded with one generate_series INSERT per tenant,
ANALYZEd, the planner's settings as they are.
- exact_ms, prefix_ms, similar_ms: the median time of `apps.assets.search._named`
  (apps.core.search.named: the exact name, then the start of a name in any case, then
  names like it among those of its first character, SHOWN rows) in the system scope,
  as an operator's search box runs it, over texts of each kind: whole names; prefixes
  of one to tens of thousands of matches; typos, which no name equals or starts with,
  so all three statements run.
- similar_tenant_ms: the typos in one tenant's scope, the tenant named (as a tenant's
  search box runs them); similar_empty_tenant_ms: the same for a ninth tenant that has
  no assets, whose answer must stay as quick (an index ordered by likeness alone would
  read every other tenant's assets before it gave up).
- *_baseline_ms: the same statements written directly with psycopg, in a transaction
  in the same scope (row-level security applies as for Steward); *_ratio: Steward's
  median over the baseline's.
- similar_every_name_ms: the likeness statement over every name, across tenants, the
  first character not kept (psycopg): what a typo costs where every name starts with
  the same character, and what it cost before likeness kept the first character.
- similar_plan / similar_tenant_plan: the access path PostgreSQL chose for the likeness
  statement (EXPLAIN), to show the GiST index's ordered scan serving it under the policy,
  the first character's range its index condition.
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
from apps.core.search import after_prefix
from apps.tenancy.models import Region, Tenant
from bench.harness import dsn

ASSET = Asset._meta.db_table
TENANTS = 8
WORDS = "acme,bolt,cedar,delta,ember,fjord,gale,harbor,iris,jade,kite,lumen,moss,nova,orbit"
PREFIXES = ("acm", "ACME-B", "kite-o", "nova-moss-12", "zzz", "lumen-jade-4")


def _seeded_name(g: int) -> str:
    """The name the seed gives its g-th asset in every tenant."""
    words = WORDS.split(",")
    return f"{words[(g * 7) % 15]}-{words[(g // 15) % 15]}-{g}"


EXACT = (_seeded_name(12345), _seeded_name(7), _seeded_name(60003), "no-such-asset")
TYPOS = ("acne-lumen-4821", "kiet-orbit-9931", "harbour-iris-13", "nvoa-mos-125", "qqqxz")
SELECT = f"SELECT a.*, t.* FROM {ASSET} a JOIN tenancy_tenant t ON t.id = a.tenant_id"  # noqa: S608


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


def _steward(text: str, tenant=None):
    def work():
        with tenant_scope(tenant) if tenant else system_scope():
            assets_search._named(selectors.asset_list(tenant=tenant), text)

    return work


def _baseline(conn, text: str, tenant=None):
    """The statements `named` runs for `text`, as psycopg runs them: the likeness one only
    when the first two found nothing, as there."""
    start, after = text.upper(), after_prefix(text.upper())
    mine = " AND a.tenant_id = %s" if tenant else ""
    extra = [tenant.pk] if tenant else []

    def work():
        with conn.transaction(), conn.cursor() as cursor:
            if tenant:
                cursor.execute("SELECT set_config('steward.tenant_id', %s, true)", [str(tenant.pk)])
            else:
                cursor.execute("SELECT set_config('steward.system', 'on', true)")
            cursor.execute(f"{SELECT} WHERE a.name = %s{mine} LIMIT 20", [text, *extra])
            found = len(cursor.fetchall())
            cursor.execute(
                f"{SELECT} WHERE a.name_folded >= %s AND a.name_folded < %s{mine}"
                " ORDER BY a.name_folded, a.id LIMIT %s",
                [start, after, *extra, 20 + found],
            )
            found += len(cursor.fetchall())
            if not found:
                initial = _range(text[:1].upper())
                _alike(cursor, text, f"{initial}{mine}", [*_initial_params(text), *extra])

    return work


def _range(start: str) -> str:
    return " AND a.name_folded >= %s AND a.name_folded < %s" if start else ""


def _initial_params(text: str) -> list[str]:
    start = text[:1].upper()
    return [start, after_prefix(start)] if start else []


def _alike(cursor, text: str, where: str, params: list) -> None:
    cursor.execute(
        f"SELECT a.*, t.*, a.name <-> %s AS d FROM {ASSET} a"  # noqa: S608
        f" JOIN tenancy_tenant t ON t.id = a.tenant_id WHERE true{where}"
        " ORDER BY d LIMIT 20",
        [text, *params],
    )
    cursor.fetchall()


def _every_name(conn, text: str):
    """The likeness statement over every name, the first character not kept: what a typo
    costs when every name starts with the same character, so that its range holds them
    all (and what it cost before likeness kept the first character)."""

    def work():
        with conn.transaction(), conn.cursor() as cursor:
            cursor.execute("SELECT set_config('steward.system', 'on', true)")
            _alike(cursor, text, "", [])

    return work


def _plan(text: str, tenant=None) -> str:
    """The scan PostgreSQL chose for the likeness statement, as Steward sends it."""
    from django.contrib.postgres.search import TrigramDistance
    from django.db.models import F, Value

    with tenant_scope(tenant) if tenant else system_scope():
        alike = (
            selectors.asset_list(tenant=tenant)
            .filter(name_folded__gte=text[:1].upper(), name_folded__lt=_initial_params(text)[1])
            .annotate(search_distance=TrigramDistance(F("name"), Value(text)))
            .order_by("search_distance")[:20]
        )
        sql, params = alike.query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN " + sql, params)
            lines = [row[0].strip() for row in cursor.fetchall()]
    scans = [line.split("  (")[0].lstrip("-> ") for line in lines if "Scan" in line]
    orders = [line for line in lines if line.startswith("Order By")]
    return "; ".join(scans + orders)


def _case(texts, rounds: int, tenant=None) -> tuple[float, float]:
    steward = statistics.median(_median_ms(_steward(t, tenant), rounds) for t in texts)
    with psycopg.connect(dsn()) as conn:
        baseline = statistics.median(_median_ms(_baseline(conn, t, tenant), rounds) for t in texts)
    return steward, baseline


def run(*, quick: bool) -> dict:
    per_tenant = (100_000 if quick else 1_000_000) // TENANTS
    region = Region.objects.create(slug="bench-region", name="Bench")
    tenants = [
        Tenant.objects.create(slug=f"bench-{n}", name=f"Bench {n}", home_region=region)
        for n in range(TENANTS)
    ]
    empty = Tenant.objects.create(slug="bench-empty", name="Bench empty", home_region=region)
    started = time.perf_counter()
    _seed(tenants, per_tenant)
    seeded_s = time.perf_counter() - started
    rounds = 30
    with system_scope():
        found = {
            t: [a.name for a in assets_search._named(selectors.asset_list(), t)][:3]
            for t in (*EXACT, *PREFIXES, *TYPOS)
        }
    result = {"name": "search", "assets": per_tenant * TENANTS, "seeded_s": round(seeded_s, 1)}
    for kind, texts, tenant in (
        ("exact", EXACT, None),
        ("prefix", PREFIXES, None),
        ("similar", TYPOS, None),
        ("similar_tenant", TYPOS, tenants[3]),
        ("similar_empty_tenant", TYPOS, empty),
    ):
        steward, baseline = _case(texts, rounds, tenant)
        result[f"{kind}_ms"] = round(steward, 2)
        result[f"{kind}_baseline_ms"] = round(baseline, 2)
        result[f"{kind}_ratio"] = round(steward / baseline, 2)
    with psycopg.connect(dsn()) as conn:
        every = statistics.median(_median_ms(_every_name(conn, t), rounds) for t in TYPOS)
    result["similar_every_name_ms"] = round(every, 2)
    result["similar_plan"] = _plan(TYPOS[0])
    result["similar_tenant_plan"] = _plan(TYPOS[0], tenants[3])
    result["similar_empty_tenant_plan"] = _plan(TYPOS[0], empty)
    result["found"] = found
    return result
