"""Steward's part of a deletion: the audit trail redacted, every entry kept."""

import pytest
from django.db import DatabaseError, connection

from apps.core.scope import tenant_scope
from apps.tenancy.models import AuditEvent
from tests.governance.factories import approved, complete, open_tasks

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_cooling_off")]


def test_audit_redaction_keeps_every_entry_and_replaces_personal_data(bound, tenant_a):
    order = approved(tenant_a)
    with tenant_scope(tenant_a):
        before = AuditEvent.objects.filter(tenant=tenant_a).count()
        assert AuditEvent.objects.filter(tenant=tenant_a, actor_label="req-deletion").exists()
    for number in (1, 2, 3):
        for task in open_tasks(order, number):
            complete(task)
    with tenant_scope(tenant_a):
        entries = list(AuditEvent.objects.filter(tenant=tenant_a))
        redacted = [e for e in entries if e.redacted_at is not None]
    assert len(redacted) >= before > 0  # kept; entries written during the run are there too
    assert {e.actor_label for e in redacted} == {"[redacted]"}
    assert all(e.actor_user_id is None and e.object_repr == "[redacted]" for e in redacted)
    assert all(set(e.changes.values()) <= {"[redacted]"} for e in redacted)
    # outside the redaction door the audit trail is still append-only
    with pytest.raises(DatabaseError), tenant_scope(tenant_a), connection.cursor() as cursor:
        cursor.execute("UPDATE tenancy_auditevent SET actor_label = 'x'")
    with pytest.raises(DatabaseError), tenant_scope(tenant_a), connection.cursor() as cursor:
        cursor.execute("SELECT set_config('steward.audit_redaction', 'on', true)")
        cursor.execute("DELETE FROM tenancy_auditevent")
