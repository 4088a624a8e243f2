"""Bounded counts: a count past its bound is remembered for its statement and scope
only, a count under it is read every time, and each is the count Django would read."""

import random

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from apps.core.counting import PAST_BOUND_SECONDS, _past_bound_key, count_up_to
from apps.core.redis import get_redis
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.models import Membership, Tenant
from tests.factories import TenantFactory, member

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_remembered_counts")]


def _counted(rows, bound):
    """The count and how many statements reading it took."""
    with CaptureQueriesContext(connection) as queries:
        n = count_up_to(rows, bound)
    return n, len(queries)


def test_a_count_past_its_bound_is_remembered_for_its_scope_alone(tenant_a, tenant_b):
    # given three memberships in one tenant and one in another, and a bound of two
    for _ in range(3):
        member(tenant_a)
    member(tenant_b)
    rows = Membership.objects.all()
    with tenant_scope(tenant_a):
        # when the first tenant's count passes the bound, then is asked for again
        assert _counted(rows, 2) == (3, 1)
        # then it is answered without PostgreSQL, as one past the bound
        assert _counted(rows, 2) == (3, 0)
        sql, params = rows.order_by().values("pk")[:3].query.sql_with_params()
        key = _past_bound_key(rows.db, 2, sql, params)
        assert 0 < get_redis().ttl(key) <= PAST_BOUND_SECONDS
    # and the same statement in the other tenant's scope is read, and counts its own rows
    with tenant_scope(tenant_b):
        assert _counted(rows, 2) == (1, 1)
    # as does the same statement under another bound
    with tenant_scope(tenant_a):
        assert _counted(rows, 5) == (3, 1)


def test_a_count_under_its_bound_is_read_every_time(tenant_a):
    member(tenant_a)
    with tenant_scope(tenant_a):
        assert _counted(Membership.objects.all(), 5) == (1, 1)
    # when a row is added, the next count has it
    member(tenant_a)
    with tenant_scope(tenant_a):
        assert _counted(Membership.objects.all(), 5) == (2, 1)


def test_without_redis_every_count_is_read(settings, tenant_a):
    for _ in range(3):
        member(tenant_a)
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    with tenant_scope(tenant_a):
        assert _counted(Membership.objects.all(), 2) == (3, 1)
        assert _counted(Membership.objects.all(), 2) == (3, 1)


@pytest.mark.parametrize("seed", range(3))
def test_each_count_is_the_count_django_reads(region, seed):
    # given tenants and memberships whose slugs, names and roles vary with the seed
    chance = random.Random(seed)
    for n in range(chance.randint(4, 9)):
        tenant = TenantFactory(
            slug=f"c{seed}-{n}", name=chance.choice(["Alpha", "Beta", "Alpine"]), home_region=region
        )
        for _ in range(chance.randint(0, 4)):
            member(tenant, role=chance.choice(["member", "admin"]))
    shapes = [
        Tenant.objects.all(),
        Tenant.objects.filter(name__icontains="al"),
        Tenant.objects.filter(Q(slug__icontains="1") | Q(name__icontains="beta")),
        Membership.objects.select_related("tenant", "user").filter(role="admin"),
        Membership.objects.filter(tenant__name__startswith="Al").order_by("-pk"),
        Tenant.objects.filter(memberships__role="admin").distinct(),
        Tenant.objects.filter(memberships__role="member"),  # a row per membership
        Tenant.objects.filter(pk__in=[]),  # no statement can match: Django reads none
        Tenant.objects.none(),
    ]
    with system_scope():
        for rows in shapes:
            expected = rows.count()
            for bound in (0, 1, expected - 1, expected, expected + 1):
                if bound >= 0:
                    assert count_up_to(rows, bound) == min(expected, bound + 1), (rows.query, bound)
