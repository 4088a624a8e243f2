"""`api`: a service listing tenants through the whole stack, against the same reads by hand.

Steward: GET /api/v1/tenancy/tenants/ with a bearer token, in process through every
middleware (request id, token, tenant scope and its transaction), DRF, the FilterSet,
cursor pagination and JSON rendering.
Baseline: the same two reads written directly with psycopg (the token by digest,
then one page of tenants joined to their region) and json.dumps of the rows.
"""

from __future__ import annotations

import hashlib
import json

import psycopg
from django.conf import settings
from django.test import Client

from apps.core.context import SYSTEM_ACTOR
from apps.tenancy import services
from apps.tenancy.models import Region, Tenant
from bench.harness import dsn, rate

PAGE = 50


def run(*, quick: bool) -> dict:
    requests = 300 if quick else 2000
    region = Region.objects.create(slug="bench-region", name="Bench")
    Tenant.objects.bulk_create(
        Tenant(slug=f"bench-{n:04d}", name=f"Bench {n}", home_region=region) for n in range(200)
    )
    account = services.service_account_create(actor=SYSTEM_ACTOR, name="bench")
    issued = services.api_token_issue(
        actor=SYSTEM_ACTOR, service_account=account, name="bench", scopes=["tenancy:read"]
    )

    # The throttle still runs (and costs what it costs), but must not refuse the load.
    settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"]["caller"] = "100000000/min"
    client = Client(HTTP_AUTHORIZATION=f"Bearer {issued.secret}")

    def through_steward():
        response = client.get(f"/api/v1/tenancy/tenants/?page_size={PAGE}")
        assert response.status_code == 200, response.content

    with psycopg.connect(dsn()) as conn:
        digest = hashlib.sha256(issued.secret.encode()).hexdigest()

        def by_hand():
            with conn.transaction():
                conn.execute(
                    "SELECT id, scopes, expires_at, revoked_at FROM tenancy_apitoken "
                    "WHERE digest = %s",
                    [digest],
                ).fetchone()
                rows = conn.execute(
                    "SELECT t.id::text, t.slug, t.name, t.environment_class, r.slug, t.status,"
                    " t.created_at::text, t.updated_at::text FROM tenancy_tenant t"
                    " JOIN tenancy_region r ON r.id = t.home_region_id"
                    " ORDER BY t.slug LIMIT %s",
                    [PAGE + 1],
                ).fetchall()
            json.dumps({"results": rows[:PAGE]})

        baseline = rate(by_hand, requests)
    steward = rate(through_steward, requests)
    return {
        "name": "api",
        "requests": requests,
        "page_size": PAGE,
        "api_requests_per_s": round(steward, 1),
        "baseline_requests_per_s": round(baseline, 1),
        "ratio": round(steward / baseline, 3),
    }
