"""Governance orders: their request and their approvers' decisions, or cancellation.

Approval policy: a production-class tenant needs two approvers other than the
requester, any other tenant one. A rejection ends the order. An order can be
cancelled while it waits for approval. Every step is a link of the order's evidence.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core.codes import CoreCode
from apps.core.context import Actor
from apps.core.errors import Conflict, InvalidTransition, ValidationFailed
from apps.core.scope import tenant_scope
from apps.governance.codes import GovernanceCode
from apps.governance.models import GovernanceOrder, OrderApproval
from apps.governance.orders import evidence
from apps.governance.orders.services.run import _the_order_is, order_start, order_starts_at
from apps.governance.permissions import (
    may_govern,
    require_governor,
    require_tenant_takes_new_work,
)
from apps.tenancy.audit import audit_record
from apps.tenancy.models import Tenant

Status = GovernanceOrder.Status


def approvals_needed(tenant: Tenant) -> int:
    return 2 if tenant.environment_class == Tenant.EnvironmentClass.PRODUCTION else 1


def order_request(*, actor: Actor, tenant: Tenant, kind: str, reason: str) -> GovernanceOrder:
    if actor.user is None:
        raise ValidationFailed(
            "A person requests a governance order.", code=GovernanceCode.PERSON_REQUIRED
        )
    if kind not in GovernanceOrder.Kind.values:
        raise ValidationFailed(f"There is no order kind {kind!r}.", field="kind")
    require_governor(actor, tenant.pk, "request a governance order")
    require_tenant_takes_new_work(actor, tenant, "request a governance order")
    if not reason.strip():
        raise ValidationFailed("Say why.", code=CoreCode.REASON_REQUIRED, field="reason")
    with tenant_scope(tenant):
        order = GovernanceOrder.objects.create(
            tenant=tenant,
            kind=kind,
            reason=reason,
            requested_by=actor.user,
            approvals_needed=approvals_needed(tenant),
        )
        evidence.append(
            order,
            "requested",
            by=actor.label,
            reason=reason,
            approvals_needed=order.approvals_needed,
        )
        audit_record(
            actor=actor, action=f"governance.{kind}.request", instance=order, tenant=tenant
        )
    return order


def order_decide(
    *, actor: Actor, order: GovernanceOrder, approve: bool, comment: str = ""
) -> GovernanceOrder:
    """One approver's decision. The requester cannot decide; nobody decides twice; the
    order is approved when enough others have approved, rejected at the first no."""
    if actor.user is None:
        raise ValidationFailed(
            "A person decides a governance order.", code=GovernanceCode.PERSON_REQUIRED
        )
    with tenant_scope(order.tenant_id), transaction.atomic():
        order = GovernanceOrder.objects.select_for_update().get(pk=order.pk)
        decision = Status.APPROVED if approve else Status.REJECTED
        # Refused before anything is recorded: most decisions do not move the order (it
        # waits for more approvals), yet only an order awaiting them takes one.
        if not GovernanceOrder.TRANSITIONS.allows(order.status, decision):
            raise InvalidTransition(_the_order_is(order.status), status=order.status)
        if order.requested_by_id == actor.user.pk:
            raise Conflict(
                "The requester cannot approve their own order.",
                code=GovernanceCode.REQUESTER_CANNOT_DECIDE,
            )
        require_governor(actor, order.tenant_id, "decide a governance order")
        # The policy of the tenant as it is now: reclassified to production while the
        # order waited, it needs the production number of approvers.
        order.approvals_needed = max(order.approvals_needed, approvals_needed(order.tenant))
        try:
            with transaction.atomic():
                OrderApproval.objects.create(
                    order=order,
                    tenant_id=order.tenant_id,
                    approver=actor.user,
                    approve=approve,
                    comment=comment,
                )
        except IntegrityError:
            raise Conflict(
                "You have decided this order already.", code=GovernanceCode.ALREADY_DECIDED
            ) from None
        evidence.append(
            order, "approved" if approve else "rejected", by=actor.label, comment=comment
        )
        approvals = order.approvals.filter(approve=True).count()
        if not approve or approvals >= order.approvals_needed:
            GovernanceOrder.TRANSITIONS.move(
                order,
                decision,
                detail=_the_order_is,
                decided_at=timezone.now(),
                approvals_needed=order.approvals_needed,
            )
            evidence.append(order, f"order_{order.status}", approvals=approvals)
        audit_record(
            actor=actor,
            action=f"governance.{order.kind}.{'approve' if approve else 'reject'}",
            instance=order,
            tenant=order.tenant_id,
        )
    if order.status == Status.APPROVED and order_starts_at(order) <= timezone.now():
        order = order_start(order=order)
    return order


def order_cancel(*, actor: Actor, order: GovernanceOrder, reason: str = "") -> GovernanceOrder:
    """Cancel an order before its first phase begins: while it waits for approval, or
    approved (no phase runs yet). The requester, the tenant's admins or an operator."""
    with tenant_scope(order.tenant_id), transaction.atomic():
        order = GovernanceOrder.objects.select_for_update().get(pk=order.pk)
        if actor.user is None or (
            order.requested_by_id != actor.user.pk and not may_govern(actor.user, order.tenant_id)
        ):
            require_governor(actor, order.tenant_id, "cancel a governance order")
        GovernanceOrder.TRANSITIONS.move(
            order,
            Status.CANCELLED,
            detail=lambda status: (
                f"The order is {status}; only one whose phases have not begun can be cancelled."
            ),
            decided_at=timezone.now(),
        )
        evidence.append(order, "cancelled", by=actor.label, reason=reason)
        audit_record(
            actor=actor,
            action=f"governance.{order.kind}.cancel",
            instance=order,
            tenant=order.tenant_id,
        )
    return order
