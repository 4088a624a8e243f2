"""An order's hash-chained evidence: it verifies, a tampered entry is found, the
database refuses changes, and it is the tenant's alone."""

import copy

import pytest
from django.db import DatabaseError, connection, transaction

from apps.core.scope import tenant_scope
from apps.governance.models import EvidenceEntry, GovernanceOrder
from apps.governance.orders import evidence, services
from tests.governance.factories import admin_actor, request_deletion

pytestmark = pytest.mark.django_db


def test_the_evidence_chain_verifies_and_a_tampered_entry_is_found(tenant_a):
    order = request_deletion(tenant_a, admin_actor(tenant_a, "requester"))
    order = services.order_decide(
        actor=admin_actor(tenant_a, "approver"), order=order, approve=True
    )
    with tenant_scope(tenant_a):
        doc = evidence.document(order)
    assert [e["kind"] for e in doc["entries"]] == ["requested", "approved", "order_approved"]
    assert evidence.verify(doc) == (True, None)
    for tamper in (
        lambda d: d["entries"][1]["data"].update(by="someone else"),
        lambda d: d["entries"].pop(1),
        lambda d: d.update(final_digest="0" * 64),
        lambda d: d.update(order="00000000-0000-0000-0000-000000000000"),  # another order's
        lambda d: d.update(kind="export"),
    ):
        forged = copy.deepcopy(doc)
        tamper(forged)
        ok, at = evidence.verify(forged)
        assert not ok and at is not None


def test_the_database_refuses_to_change_or_remove_evidence(tenant_a):
    order = request_deletion(tenant_a, admin_actor(tenant_a, "requester"))
    with tenant_scope(tenant_a):
        for statement in (
            "UPDATE governance_evidenceentry SET kind = 'x'",
            "DELETE FROM governance_evidenceentry",
        ):
            with pytest.raises(DatabaseError), connection.cursor() as cursor:
                with transaction.atomic():
                    cursor.execute(statement)
        assert EvidenceEntry.objects.filter(order=order).count() == 1


def test_orders_and_their_evidence_are_the_tenants_alone(tenant_a, tenant_b):
    request_deletion(tenant_a, admin_actor(tenant_a, "requester"))
    with tenant_scope(tenant_b):
        assert not GovernanceOrder.objects.exists() and not EvidenceEntry.objects.exists()
