import pytest
from django.db import DatabaseError, connection, transaction

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy import services
from apps.tenancy.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_services_write_the_audit_row_in_the_same_transaction(tenant_a, region):
    with pytest.raises(RuntimeError), transaction.atomic():
        services.tenant_update(actor=SYSTEM_ACTOR, tenant=tenant_a, name="Renamed")
        raise RuntimeError("the change fails after the service")
    with system_scope():
        assert not AuditEvent.objects.filter(action="tenant.update").exists()
    tenant_a.refresh_from_db()
    assert tenant_a.name == "Alpha"
    services.tenant_update(actor=SYSTEM_ACTOR, tenant=tenant_a, name="Renamed")
    with system_scope():
        event = AuditEvent.objects.get(action="tenant.update")
    assert event.changes == {"name": ["Alpha", "Renamed"]}
    assert event.tenant_id == tenant_a.pk


@pytest.mark.parametrize("statement", ["UPDATE {table} SET action = 'x'", "DELETE FROM {table}"])
def test_the_database_refuses_to_change_or_delete_audit_events(tenant_a, statement):
    services.tenant_update(actor=SYSTEM_ACTOR, tenant=tenant_a, name="Renamed")
    with tenant_scope(tenant_a):
        with pytest.raises(DatabaseError, match="append-only"), transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(statement.format(table=AuditEvent._meta.db_table))
        assert AuditEvent.objects.filter(action="tenant.update").count() == 1


def test_token_secrets_never_reach_the_audit_trail(tenant_a):
    account = services.service_account_create(actor=SYSTEM_ACTOR, name="svc", tenant=tenant_a)
    issued = services.api_token_issue(
        actor=SYSTEM_ACTOR, service_account=account, name="t", scopes=["tenancy:read"]
    )
    with system_scope():
        dumped = [str(e.changes) + e.object_repr for e in AuditEvent.objects.all()]
    assert not any(issued.secret in text or issued.token.digest in text for text in dumped)
