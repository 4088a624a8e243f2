"""The transaction-local tenant scope: nested scopes restore the outer one, and scopes
only narrow."""

import pytest
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext

from apps.core.scope import ScopeViolation, current_scope, system_scope, tenant_scope
from apps.tenancy.models import Membership
from tests.factories import member

pytestmark = pytest.mark.django_db


def test_nested_scopes_restore_the_outer_scope(tenant_a, tenant_b):
    member(tenant_a)
    member(tenant_b)

    def setting():
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('steward.tenant_id', true)")
            return cursor.fetchone()[0]

    with system_scope():
        with tenant_scope(tenant_a):
            assert setting() == str(tenant_a.pk)
            assert Membership.objects.count() == 1
        assert Membership.objects.count() == 2
        with pytest.raises(RuntimeError), tenant_scope(tenant_b):
            raise RuntimeError("rolled back")
        assert Membership.objects.count() == 2
    assert setting() in ("", None)
    assert Membership.objects.count() == 0


def test_scopes_only_narrow(tenant_a, tenant_b):
    with tenant_scope(tenant_a):
        with pytest.raises(ScopeViolation), tenant_scope(tenant_b):
            pass
        with pytest.raises(ScopeViolation), system_scope():
            pass
        with tenant_scope(tenant_a):
            assert current_scope().tenant_id == tenant_a.pk


def test_the_same_scope_again_sets_nothing_and_still_rolls_back_alone(tenant_a):
    """An audit row or an emit inside the request's own scope re-enters that scope: a
    savepoint, and no setting of what is set already."""
    with tenant_scope(tenant_a):
        with CaptureQueriesContext(connection) as ctx, tenant_scope(tenant_a):
            member(tenant_a, username="inner")
        assert not [q for q in ctx.captured_queries if "set_config" in q["sql"]]
        with pytest.raises(IntegrityError), tenant_scope(tenant_a):
            member(tenant_a, username="inner")  # the same username again
        # the savepoint took only the failed insert back; the scope still holds
        assert current_scope().tenant_id == tenant_a.pk
        assert list(Membership.objects.values_list("user__username", flat=True)) == ["inner"]


def test_reads_in_the_scope_already_held_cost_no_statement_of_their_own(tenant_a):
    """A block of reads (`reads_only`) in the scope the caller holds runs in the caller's
    transaction as it is: no savepoint and no setting. Anywhere else it is an ordinary
    scope: set on entry, narrowing only."""
    member(tenant_a)
    with system_scope():
        with CaptureQueriesContext(connection) as ctx, system_scope(reads_only=True):
            assert Membership.objects.count() == 1
        assert [q["sql"] for q in ctx.captured_queries if "membership" not in q["sql"]] == []
        assert len(ctx.captured_queries) == 1
    with CaptureQueriesContext(connection) as ctx, system_scope(reads_only=True):
        assert current_scope().system
        assert Membership.objects.count() == 1
    assert any("set_config" in q["sql"] for q in ctx.captured_queries)
    assert current_scope().is_empty
    with tenant_scope(tenant_a), pytest.raises(ScopeViolation), system_scope(reads_only=True):
        pass
