"""Tenant isolation enforced by PostgreSQL row-level security, not by application code."""

import pytest
from django.apps import apps
from django.db import DatabaseError, connection, transaction

from apps.core.scope import current_scope, system_scope, tenant_scope
from apps.tenancy.models import Membership, Tenant
from apps.tenancy.rls import READ_POLICY, WRITE_POLICY
from tests.factories import member

pytestmark = pytest.mark.django_db


def tenant_owned_models():
    """Every model with a foreign key to Tenant, with the column that holds it."""
    found = []
    for model in apps.get_models():
        for field in model._meta.concrete_fields:
            if field.many_to_one and field.related_model is Tenant:
                found.append((model, field.column))
    return found


def test_every_model_with_a_tenant_foreign_key_is_under_row_level_security():
    models = tenant_owned_models()
    # The gate must look at something: the foundation's own tenant tables at least.
    labels = {model._meta.label for model, _ in models}
    assert {"tenancy.Membership", "tenancy.AuditEvent", "tenancy.ServiceAccount"} <= labels

    missing = []
    with connection.cursor() as cursor:
        for model, column in models:
            table = model._meta.db_table
            cursor.execute(
                "SELECT relrowsecurity, relforcerowsecurity FROM pg_class WHERE oid = %s::regclass",
                [table],
            )
            enabled, forced = cursor.fetchone()
            cursor.execute(
                "SELECT policyname, cmd, coalesce(qual, '') || coalesce(with_check, '') "
                "FROM pg_policies WHERE tablename = %s",
                [table],
            )
            policies = {name: (cmd, text) for name, cmd, text in cursor.fetchall()}
            problems = []
            if not enabled:
                problems.append("RLS not enabled")
            if not forced:
                problems.append("RLS not forced")
            for name, cmd in ((READ_POLICY, "SELECT"), (WRITE_POLICY, "ALL")):
                if name not in policies:
                    problems.append(f"policy {name} missing")
                elif policies[name][0] != cmd or column not in policies[name][1]:
                    problems.append(f"policy {name} is not a {cmd} policy on {column}")
            if problems:
                missing.append(f"{model._meta.label} ({table}): {', '.join(problems)}")
    assert not missing, "tenant tables without row-level security:\n" + "\n".join(missing)


def test_the_application_role_is_neither_superuser_nor_bypassrls():
    with connection.cursor() as cursor:
        cursor.execute("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = current_user")
        assert cursor.fetchone() == (False, False)


def test_without_a_scope_a_non_empty_table_reads_as_empty(tenant_a):
    member(tenant_a)
    with system_scope():
        assert Membership.objects.count() == 1
    assert current_scope().is_empty
    assert Membership.objects.count() == 0
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {Membership._meta.db_table}")  # noqa: S608
        assert cursor.fetchone() == (0,)


def test_a_tenant_cannot_read_update_or_delete_another_tenants_rows(tenant_a, tenant_b):
    member(tenant_a, username="in-a")
    member(tenant_b, username="in-b", role="member")

    with tenant_scope(tenant_a):
        assert list(Membership.objects.values_list("user__username", flat=True)) == ["in-a"]
        assert Membership.objects.filter(tenant=tenant_b).count() == 0
        assert Membership.objects.filter(tenant=tenant_b).update(role="admin") == 0
        assert Membership.objects.filter(tenant=tenant_b).delete()[0] == 0
        with connection.cursor() as cursor:
            cursor.execute(
                f"UPDATE {Membership._meta.db_table} SET role = 'admin' WHERE tenant_id = %s",  # noqa: S608
                [tenant_b.pk],
            )
            assert cursor.rowcount == 0

    with system_scope():
        row = Membership.objects.get(tenant=tenant_b)
    assert row.role == "member"


def test_a_tenant_cannot_insert_a_row_for_another_tenant(tenant_a, tenant_b):
    user = member(tenant_a, username="in-a").__class__.objects.create(username="outsider")
    with tenant_scope(tenant_a), pytest.raises(DatabaseError, match="row-level security"):
        with transaction.atomic():
            Membership.objects.create(tenant=tenant_b, user=user)
    with system_scope():
        assert not Membership.objects.filter(user=user).exists()


def test_an_insert_without_a_scope_is_refused(tenant_a):
    user = member(tenant_a).__class__.objects.create(username="nobody")
    with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
        Membership.objects.create(tenant=tenant_a, user=user)


def test_system_scope_reads_every_tenant_but_writes_none(tenant_a, tenant_b):
    member(tenant_a, username="in-a")
    member(tenant_b, username="in-b")
    with system_scope():
        assert Membership.objects.count() == 2
        assert Membership.objects.filter(tenant=tenant_b).update(role="admin") == 0
        assert Membership.objects.filter(tenant=tenant_a).delete()[0] == 0
        user = Membership.objects.first().user.__class__.objects.create(username="late")
        with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
            Membership.objects.create(tenant=tenant_b, user=user)
        assert set(Membership.objects.values_list("role", flat=True)) == {"member"}
