"""Bounded counts: a count past its bound is remembered for its statement and scope
only, a count under it is read every time, and each is the count Django would read."""

import random

import pytest
from django.db import connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext

from apps.core import counting
from apps.core.counting import PAST_BOUND_SECONDS, count_up_to
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.models import Membership, Tenant
from tests.factories import TenantFactory, member

pytestmark = pytest.mark.django_db


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


def test_a_count_past_its_bound_is_read_again_once_its_time_is_up(monkeypatch, tenant_a):
    clock = [1000.0]
    monkeypatch.setattr(counting.time, "monotonic", lambda: clock[0])
    for _ in range(3):
        member(tenant_a)
    rows = Membership.objects.all()
    with tenant_scope(tenant_a):
        assert _counted(rows, 2) == (3, 1)
        clock[0] += PAST_BOUND_SECONDS - 0.5
        assert _counted(rows, 2) == (3, 0)
        # when the time is up, the count is read again and found under the bound now
        Membership.objects.filter(pk=Membership.objects.first().pk).delete()
        clock[0] += 1
        assert _counted(rows, 2) == (2, 1)
        assert _counted(rows, 2) == (2, 1)


def test_a_process_remembers_a_bounded_number_of_counts(monkeypatch, tenant_a):
    monkeypatch.setattr(counting, "_REMEMBERED_AT_MOST", 2)
    for _ in range(3):
        member(tenant_a)
    first, second, third = (
        Membership.objects.filter(role__in=["member", "admin", f"r{n}"]) for n in range(3)
    )
    with tenant_scope(tenant_a):
        for rows in (first, second, third):
            assert _counted(rows, 1) == (2, 1)
        # the oldest was forgotten to make room; the two latest are answered from memory
        assert _counted(first, 1) == (2, 1)
        assert _counted(third, 1) == (2, 0)


def test_a_statement_of_its_own_is_remembered_past_the_bound(monkeypatch, tenant_a, tenant_b):
    monkeypatch.setattr(counting, "COUNTED_EXACTLY", 2)
    for _ in range(3):
        member(tenant_a)
    sql = f"SELECT count(*) FROM (SELECT FROM {Membership._meta.db_table} LIMIT %s) AS m"

    def count():
        """The count, and whether it was read."""
        if counting.counted_past_bound(sql):
            return counting.COUNTED_EXACTLY + 1, False
        with connection.cursor() as cursor:
            cursor.execute(sql, [counting.COUNTED_EXACTLY + 1])
            return counting.read_count(sql, cursor.fetchone()[0]), True

    with tenant_scope(tenant_a):
        assert count() == (3, True)
        # remembered past the bound: not read again, and answered as one past it
        assert count() == (3, False)
    with tenant_scope(tenant_b):  # another scope counts its own rows
        assert count() == (0, True)
        assert count() == (0, True)  # a count under the bound is read every time


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
