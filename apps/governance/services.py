"""Governance orders: requested by a tenant's admin, approved by others, with evidence.

Approval policy: a production-class tenant needs two approvers other than the
requester, any other tenant one. A rejection ends the order. An order can be
cancelled while it waits for approval. Every step is a link of the order's evidence.
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.core.context import Actor
from apps.core.errors import Conflict, DomainError, InvalidTransition, ValidationFailed
from apps.governance import evidence
from apps.governance.models import GovernanceOrder, OrderApproval
from apps.tenancy.audit import audit_record
from apps.tenancy.models import Tenant
from apps.tenancy.scope import tenant_scope

Status = GovernanceOrder.Status


def approvals_needed(tenant: Tenant) -> int:
    return 2 if tenant.environment_class == Tenant.EnvironmentClass.PRODUCTION else 1


def _may_govern(user, tenant_id) -> bool:
    """Operators, and the admins of the order's tenant (its workspace admins): the
    tenant's administer_tenant object permission, which an admin membership grants."""
    if user is None:
        return False
    if user.is_operator:
        return True
    with tenant_scope(tenant_id):  # object permissions on a tenant are its rows
        return user.has_perm("tenancy.administer_tenant", Tenant.objects.get(pk=tenant_id))


class NotAllowed(DomainError):
    status = 403
    code = "not_allowed"
    title = "Not allowed"


def _require_governor(actor: Actor, tenant_id, what: str) -> None:
    if not _may_govern(actor.user, tenant_id):
        raise NotAllowed(f"Only the tenant's admins or an operator may {what}.")


def order_request(*, actor: Actor, tenant: Tenant, kind: str, reason: str) -> GovernanceOrder:
    if actor.user is None:
        raise ValidationFailed("A person requests a governance order.", code="person_required")
    if kind not in GovernanceOrder.Kind.values:
        raise ValidationFailed(f"There is no order kind {kind!r}.", code="invalid", field="kind")
    _require_governor(actor, tenant.pk, "request a governance order")
    if not reason.strip():
        raise ValidationFailed("Say why.", code="reason_required", field="reason")
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
        raise ValidationFailed("A person decides a governance order.", code="person_required")
    with tenant_scope(order.tenant_id), transaction.atomic():
        order = GovernanceOrder.objects.select_for_update().get(pk=order.pk)
        if order.status != Status.REQUESTED:
            raise InvalidTransition(f"The order is {order.status}.", status=order.status)
        if order.requested_by_id == actor.user.pk:
            raise Conflict(
                "The requester cannot approve their own order.", code="requester_cannot_decide"
            )
        _require_governor(actor, order.tenant_id, "decide a governance order")
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
            raise Conflict("You have decided this order already.", code="already_decided") from None
        evidence.append(
            order, "approved" if approve else "rejected", by=actor.label, comment=comment
        )
        approvals = order.approvals.filter(approve=True).count()
        if not approve or approvals >= order.approvals_needed:
            order.status = Status.APPROVED if approve else Status.REJECTED
            order.decided_at = timezone.now()
            order.save(update_fields=["status", "decided_at", "approvals_needed"])
            evidence.append(order, f"order_{order.status}", approvals=approvals)
        audit_record(
            actor=actor,
            action=f"governance.{order.kind}.{'approve' if approve else 'reject'}",
            instance=order,
            tenant=order.tenant_id,
        )
    return order


def order_cancel(*, actor: Actor, order: GovernanceOrder, reason: str = "") -> GovernanceOrder:
    """Cancel an order before its first phase begins: while it waits for approval, or
    approved (no phase runs yet). The requester, the tenant's admins or an operator."""
    with tenant_scope(order.tenant_id), transaction.atomic():
        order = GovernanceOrder.objects.select_for_update().get(pk=order.pk)
        if actor.user is None or (
            order.requested_by_id != actor.user.pk and not _may_govern(actor.user, order.tenant_id)
        ):
            _require_governor(actor, order.tenant_id, "cancel a governance order")
        if order.status not in (Status.REQUESTED, Status.APPROVED):
            raise InvalidTransition(
                f"The order is {order.status}; only one whose phases have not begun can be "
                "cancelled.",
                status=order.status,
            )
        order.status = Status.CANCELLED
        order.decided_at = timezone.now()
        order.save(update_fields=["status", "decided_at"])
        evidence.append(order, "cancelled", by=actor.label, reason=reason)
        audit_record(
            actor=actor,
            action=f"governance.{order.kind}.cancel",
            instance=order,
            tenant=order.tenant_id,
        )
    return order
