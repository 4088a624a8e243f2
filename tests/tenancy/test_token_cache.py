"""Bearer tokens served from apps.tenancy.token_cache: a cached token costs no
statement, and every change that ends or narrows a token is seen at once, by this
process and by other web processes alike; the throttle still counts across them."""

import http.client
import json
import os
import socket
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.core.context import SYSTEM_ACTOR
from apps.core.redis import get_redis
from apps.tenancy import token_cache
from apps.tenancy.services import api_token_revoke, api_token_rotate, tenant_update
from tests.conftest import bearer
from tests.factories import service_token
from tests.query_counts import queries_for
from tests.support import database_url, problem, wait_for

TENANTS = "/api/v1/tenancy/tenants/"
ASSETS = "/api/v1/assets/assets/"
ROOT = Path(__file__).resolve().parents[2]


def _cached(issued) -> bool:
    return get_redis().exists(f"steward:auth:token:{issued.token.digest}") == 1


@pytest.mark.django_db
def test_a_cached_token_costs_no_statement_and_a_revoked_one_is_refused_at_once(api):
    issued = service_token()
    client = bearer(api, issued)
    first = queries_for(lambda: client.get(TENANTS))
    assert _cached(issued)
    with CaptureQueriesContext(connection) as again:
        assert client.get(TENANTS).status_code == 200
    # No look-up of the token (its own transaction), and last use was recorded already.
    assert len(again.captured_queries) < first
    assert not [q for q in again.captured_queries if "tenancy_apitoken" in q["sql"]]
    api_token_revoke(actor=SYSTEM_ACTOR, token=issued.token)
    problem(client.get(TENANTS), 401, "token_revoked")


@pytest.mark.django_db
def test_rotation_s_end_and_a_tenant_s_suspension_are_seen_at_once(api, tenant_a):
    issued = service_token()
    client = bearer(api, issued)
    assert client.get(TENANTS).status_code == 200
    api_token_rotate(actor=SYSTEM_ACTOR, token=issued.token, overlap=timedelta(0))
    problem(client.get(TENANTS), 401, "token_expired")

    tenant_service = bearer(api, service_token(tenant=tenant_a, scopes=["assets:write"]))
    assert tenant_service.get(ASSETS).status_code == 200
    tenant_update(actor=SYSTEM_ACTOR, tenant=tenant_a, status="suspended")
    problem(tenant_service.post(ASSETS, {"name": "x"}), 403, "tenant_suspended")


@pytest.mark.django_db
def test_a_cached_entry_from_an_older_generation_is_not_used(api):
    issued = service_token()
    client = bearer(api, issued)
    assert client.get(TENANTS).status_code == 200
    token, generation = token_cache.lookup(issued.token.digest)
    assert token is not None and token.scopes == issued.token.scopes
    # A read that saw the token live stores it under the generation it read first; a
    # change in between leaves that entry unused.
    token_cache.invalidate()
    token_cache.store(token, generation)
    assert token_cache.lookup(issued.token.digest)[0] is None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.django_db(transaction=True)
def test_web_processes_refuse_a_revoked_token_at_once_and_share_the_throttle():
    # given two gunicorn processes serving one token, rate limited at 20 a minute
    revoked, throttled = service_token(), service_token()
    port = _free_port()
    env = {**os.environ, "DATABASE_URL": database_url(), "STEWARD_LOG_LEVEL": "WARNING"}
    env["STEWARD_API_RATE"] = "20/min"
    gunicorn = str(Path(sys.executable).parent / "gunicorn")
    proc = subprocess.Popen(  # noqa: S603
        [gunicorn, "portal.wsgi:application", "-b", f"127.0.0.1:{port}", "--workers", "2"],
        cwd=ROOT,
        env=env,
    )

    def get(path, issued):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {issued.secret}"})
            answer = conn.getresponse()
            return answer.status, json.loads(answer.read() or b"{}")
        finally:
            conn.close()

    def up():
        try:
            return get("/healthz", revoked)[0] == 200
        except OSError:
            return False

    try:
        wait_for(up, timeout=60)
        assert [get(TENANTS, revoked)[0] for _ in range(4)] == [200] * 4
        assert _cached(revoked)
        # when this process revokes it, then every answer from the servers refuses it
        api_token_revoke(actor=SYSTEM_ACTOR, token=revoked.token)
        answers = [get(TENANTS, revoked) for _ in range(6)]
        assert [(status, body["code"]) for status, body in answers] == [(401, "token_revoked")] * 6
        # and the throttle lets exactly 20 through, whichever process answers
        statuses = [get(TENANTS, throttled)[0] for _ in range(24)]
        assert statuses == [200] * 20 + [429] * 4
    finally:
        proc.terminate()
        proc.wait(timeout=30)
