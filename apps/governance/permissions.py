"""Who may govern a tenant, for the services of orders and retention alike.

Governors are operators and the admins of the tenant (its workspace admins): the
tenant's `administer_tenant` object permission, which an admin membership grants.
"""

from __future__ import annotations

from apps.core.context import Actor
from apps.core.errors import DomainError
from apps.core.scope import tenant_scope
from apps.governance.codes import GovernanceCode
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
