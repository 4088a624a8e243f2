"""Celery tasks run in an explicit scope. (Stored Idempotency-Key answers expire under
the retention rules: tests/governance/retention/test_sweeper.py.)"""

import pytest

from apps.tenancy.models import Membership
from portal.celery import app
from tests.factories import member


@app.task(scope="system", name="tests.count_memberships_system")
def count_memberships_system():
    return Membership.objects.count()


@app.task(scope="tenant", name="tests.count_memberships_tenant")
def count_memberships_tenant(*, tenant_id):
    return Membership.objects.count()


@app.task(name="tests.no_scope")
def no_scope():
    return Membership.objects.count()


@pytest.mark.django_db
def test_a_task_body_runs_in_the_scope_it_declares(tenant_a, tenant_b):
    member(tenant_a)
    member(tenant_b)
    assert count_memberships_system.apply().get() == 2
    assert count_memberships_tenant.apply(kwargs={"tenant_id": str(tenant_a.pk)}).get() == 1
    with pytest.raises(ValueError, match="needs tenant_id"):
        count_memberships_tenant.apply(kwargs={"tenant_id": ""}, throw=True)
    with pytest.raises(RuntimeError, match="declares no scope"):
        no_scope.apply(throw=True)
