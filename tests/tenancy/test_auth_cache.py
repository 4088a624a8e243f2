"""Bearer tokens served from apps.tenancy.auth_cache: a cached token costs no
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
from django.conf import settings
from django.db import connection
from django.test.utils import CaptureQueriesContext

from apps.core.context import SYSTEM_ACTOR
from apps.core.redis import get_redis
from apps.core.scope import system_scope
from apps.tenancy import auth_cache, services
from apps.tenancy.models import Membership
from apps.tenancy.services import api_token_revoke, api_token_rotate, tenant_update
from tests.conftest import bearer
from tests.factories import member, service_token
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
    token, generation = auth_cache.lookup(issued.token.digest)
    assert token is not None and token.scopes == issued.token.scopes
    # A read that saw the token live stores it under the generation it read first; a
    # change in between leaves that entry unused.
    auth_cache.invalidate()
    auth_cache.store(token, generation)
    assert auth_cache.lookup(issued.token.digest)[0] is None


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


def _memberships_read(queries) -> bool:
    return any("tenancy_membership" in q["sql"] for q in queries)


@pytest.mark.django_db
def test_a_persons_memberships_are_cached_and_every_change_is_seen_at_once(
    client, tenant_a, tenant_b
):
    person = member(tenant_a, role="admin")
    services.membership_set(actor=SYSTEM_ACTOR, tenant=tenant_b, user=person, role="member")
    client.force_login(person)
    assert client.get("/assets/").status_code == 200
    with CaptureQueriesContext(connection) as again:
        page = client.get("/assets/")
    assert page.wsgi_request.tenant == tenant_a and page.wsgi_request.membership_role == "admin"
    assert not _memberships_read(again.captured_queries)  # one Redis read instead

    services.membership_set(actor=SYSTEM_ACTOR, tenant=tenant_a, user=person, role="member")
    assert client.get("/assets/").wsgi_request.membership_role == "member"

    services.tenant_update(actor=SYSTEM_ACTOR, tenant=tenant_b, name="Renamed B")
    held = client.get("/assets/").wsgi_request.available_memberships
    assert {m.tenant.name for m in held} == {tenant_a.name, "Renamed B"}

    with system_scope():
        membership = Membership.objects.get(tenant=tenant_a, user=person)
    services.membership_remove(actor=SYSTEM_ACTOR, membership=membership)
    page = client.get("/assets/")
    assert page.wsgi_request.tenant is None
    assert [m.tenant_id for m in page.wsgi_request.available_memberships] == [tenant_b.pk]


@pytest.mark.django_db
def test_memberships_are_read_from_postgresql_when_redis_does_not_answer(
    client, tenant_a, monkeypatch
):
    person = member(tenant_a, role="admin")
    client.force_login(person)

    monkeypatch.setattr(settings, "REDIS_URL", "redis://127.0.0.1:1/0")  # nothing listens
    with CaptureQueriesContext(connection) as seen:
        page = client.get("/assets/")
    assert page.status_code == 200 and page.wsgi_request.tenant == tenant_a
    assert _memberships_read(seen.captured_queries)
