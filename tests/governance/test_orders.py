"""Governance orders: who may approve, how many must, and evidence anyone can verify."""

import copy

import pytest
from django.db import DatabaseError, connection

from apps.core.context import Actor
from apps.core.errors import Conflict, InvalidTransition
from apps.core.scope import tenant_scope
from apps.governance import evidence, services
from apps.governance.models import EvidenceEntry
from tests.factories import UserFactory, member

pytestmark = pytest.mark.django_db


def person(username):
    return Actor(user=UserFactory(username=username))


def admin(tenant, username):
    return Actor(user=member(tenant, username=username, role="admin"))


def request(tenant, who):
    return services.order_request(
        actor=who, tenant=tenant, kind="deletion", reason="the customer left"
    )


@pytest.mark.parametrize(("environment", "needed"), [("production", 2), ("non_production", 1)])
def test_approval_needs_others_than_the_requester_two_for_production(tenant_a, environment, needed):
    tenant_a.environment_class = environment
    tenant_a.save()
    requester = admin(tenant_a, "admin-1")
    order = request(tenant_a, requester)
    assert order.approvals_needed == needed
    with pytest.raises(Conflict) as own:
        services.order_decide(actor=requester, order=order, approve=True)
    assert own.value.code == "requester_cannot_decide"
    first = admin(tenant_a, "approver-1")
    order = services.order_decide(actor=first, order=order, approve=True)
    with pytest.raises(Conflict):
        services.order_decide(actor=first, order=order, approve=True)  # nobody counts twice
    if needed == 2:
        assert order.status == "requested"
        order = services.order_decide(
            actor=admin(tenant_a, "approver-2"), order=order, approve=True
        )
    assert order.status == "approved"
    # approved, no phase has begun: it can still be cancelled, and then not decided again
    order = services.order_cancel(actor=requester, order=order)
    assert order.status == "cancelled"
    with pytest.raises(InvalidTransition):
        services.order_cancel(actor=requester, order=order)


def test_a_rejection_ends_the_order_and_a_waiting_one_can_be_cancelled(tenant_a):
    requester = admin(tenant_a, "requester")
    rejected = services.order_decide(
        actor=admin(tenant_a, "approver"), order=request(tenant_a, requester), approve=False
    )
    assert rejected.status == "rejected"
    cancelled = services.order_cancel(actor=requester, order=request(tenant_a, requester))
    assert cancelled.status == "cancelled"


def test_only_the_tenants_admins_or_operators_request_decide_and_cancel(
    tenant_a, tenant_b, operator
):
    from apps.core.errors import ValidationFailed
    from apps.governance.services import NotAllowed

    with pytest.raises(NotAllowed):
        request(tenant_a, Actor(user=member(tenant_a, username="plain-member")))
    with pytest.raises(ValidationFailed):
        services.order_request(
            actor=admin(tenant_a, "a1"), tenant=tenant_a, kind="bogus", reason="x"
        )
    order = request(tenant_a, admin(tenant_a, "a2"))
    outsider = admin(tenant_b, "b-admin")
    for act in (
        lambda: services.order_decide(actor=outsider, order=order, approve=True),
        lambda: services.order_cancel(actor=outsider, order=order),
        lambda: services.order_decide(actor=person("nobody"), order=order, approve=True),
    ):
        with pytest.raises(NotAllowed):
            act()
    assert services.order_decide(actor=Actor(user=operator), order=order, approve=True).status == (
        "approved"
    )


def test_a_tenant_reclassified_to_production_needs_two_approvals(tenant_a):
    order = request(tenant_a, admin(tenant_a, "requester"))
    assert order.approvals_needed == 1
    tenant_a.environment_class = "production"
    tenant_a.save()
    order = services.order_decide(actor=admin(tenant_a, "first"), order=order, approve=True)
    assert order.status == "requested" and order.approvals_needed == 2


def test_the_evidence_chain_verifies_and_a_tampered_entry_is_found(tenant_a):
    order = request(tenant_a, admin(tenant_a, "requester"))
    order = services.order_decide(actor=admin(tenant_a, "approver"), order=order, approve=True)
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
    order = request(tenant_a, admin(tenant_a, "requester"))
    with tenant_scope(tenant_a):
        for statement in (
            "UPDATE governance_evidenceentry SET kind = 'x'",
            "DELETE FROM governance_evidenceentry",
        ):
            with pytest.raises(DatabaseError), connection.cursor() as cursor:
                from django.db import transaction

                with transaction.atomic():
                    cursor.execute(statement)
        assert EvidenceEntry.objects.filter(order=order).count() == 1


def test_orders_and_their_evidence_are_the_tenants_alone(tenant_a, tenant_b):
    from apps.governance.models import GovernanceOrder

    request(tenant_a, admin(tenant_a, "requester"))
    with tenant_scope(tenant_b):
        assert not GovernanceOrder.objects.exists() and not EvidenceEntry.objects.exists()
