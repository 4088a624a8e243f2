"""The transaction-local tenant scope: nested scopes restore the outer one, and scopes
only narrow."""

import pytest
from django.db import connection

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
