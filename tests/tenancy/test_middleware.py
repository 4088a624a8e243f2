"""The request middleware: each request runs in the scope of who calls, and a pooled
connection never carries one request's scope into the next."""

import pytest
from django.db import connection
from django.test import Client

from apps.tenancy.models import Membership, User
from tests.factories import TenantFactory, member


@pytest.mark.django_db(transaction=True)
def test_two_requests_for_different_tenants_on_one_pooled_connection_never_mix(settings, region):
    """A persistent connection is reused across requests; the scope must not carry over."""
    alpha, bravo = (
        TenantFactory(slug="alpha", home_region=region),
        TenantFactory(slug="bravo", home_region=region),
    )
    member(alpha, role="admin", username="admin-a")
    member(bravo, role="admin", username="admin-b")
    client_a, client_b = Client(), Client()
    client_a.force_login(User.objects.get(username="admin-a"))
    client_b.force_login(User.objects.get(username="admin-b"))

    def backend_pid():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid(), current_setting('steward.tenant_id', true)")
            return cursor.fetchone()

    pid, scope_before = backend_pid()
    seen = []
    for client in (client_a, client_b, client_a):
        response = client.get("/api/v1/tenancy/memberships/")
        seen.append(sorted(m["tenant"] for m in response.json()["results"]))
        after_pid, leftover = backend_pid()
        assert after_pid == pid, "the test needs the connection to be reused"
        assert leftover in ("", None)
        assert Membership.objects.count() == 0  # no scope outside a request
    assert seen == [["alpha"], ["bravo"], ["alpha"]]
