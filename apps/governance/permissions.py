"""Who may govern a tenant, for the services of orders and retention alike.

Governors are operators and the admins of the tenant (its workspace admins): the
tenant's `administer_tenant` object permission, which an admin membership grants.
"""

from __future__ import annotations

from apps.core.context import Actor
from apps.core.errors import DomainError
from apps.core.scope import tenant_scope
from apps.governance.codes import GovernanceCode
from apps.tenancy.codes import TenancyCode
from apps.tenancy.models import Tenant


class NotAllowed(DomainError):
    status = 403
    code = GovernanceCode.NOT_ALLOWED
    title = "Not allowed"


def may_govern(user, tenant_id) -> bool:
    if user is None:
        return False
    if user.is_operator:
        return True
    with tenant_scope(tenant_id):  # object permissions on a tenant are its rows
        return user.has_perm("tenancy.administer_tenant", Tenant.objects.get(pk=tenant_id))


def require_governor(actor: Actor, tenant_id, what: str) -> None:
    """Refuse (403) unless the actor is a person who may govern the tenant."""
    if not may_govern(actor.user, tenant_id):
        raise NotAllowed(f"Only the tenant's admins or an operator may {what}.")


def require_operator(actor: Actor, what: str) -> None:
    """Refuse (403) unless the actor is an operator."""
    if actor.user is None or not actor.user.is_operator:
        raise NotAllowed(f"Only an operator may {what}.")


_STATUS_CODES = {
    Tenant.Status.SUSPENDED: TenancyCode.TENANT_SUSPENDED,
    Tenant.Status.OFFBOARDING: TenancyCode.TENANT_OFFBOARDING,
    Tenant.Status.DELETED: TenancyCode.TENANT_DELETED,
}


def require_tenant_takes_new_work(
    actor: Actor, tenant: Tenant, what: str, *, for_deletion: bool = False
) -> None:
    """Refuse (403, the tenant's status as the code) to start new governance work for a
    tenant that is not active, unless an operator starts it.

    A suspended or offboarding tenant's own people read but do not write, and a new
    order or hold is a write. An operator may still act for a suspended tenant
    (suspension usually precedes its deletion or a data export owed to it); for an
    offboarding one, only for the deletion in progress (`for_deletion`: a legal hold,
    which pauses the purges it covers), never a new order against data being deleted.
    A deleted tenant takes nothing."""
    with tenant_scope(tenant.pk):  # as it is now, not as the caller's copy says
        status = Tenant.objects.filter(pk=tenant.pk).values_list("status", flat=True).first()
    operator = actor.user is not None and actor.user.is_operator
    if status == Tenant.Status.ACTIVE:
        return
    if operator and (
        status == Tenant.Status.SUSPENDED or (status == Tenant.Status.OFFBOARDING and for_deletion)
    ):
        return
    raise NotAllowed(
        f"The tenant is {status}: no one may {what} for it now.",
        code=_STATUS_CODES.get(status, GovernanceCode.NOT_ALLOWED),
    )
