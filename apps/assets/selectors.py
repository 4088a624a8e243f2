from django.db.models import QuerySet

from apps.assets.models import Asset, WorkflowCallback
from apps.core.api.permissions import OPERATOR, TENANT_ADMIN


def asset_list(*, tenant=None) -> QuerySet[Asset]:
    """Assets, with their tenant. Name the `tenant` whose scope the caller runs in:
    row-level security keeps other tenants' rows out either way, but its policy (the
    session's tenant, or the system scope) does not tell PostgreSQL which tenant, so
    only a named tenant lets the tenant's indexes serve a page and its count."""
    assets = Asset.objects.select_related("tenant")
    return assets if tenant is None else assets.filter(tenant=tenant)


def callbacks_of(asset: Asset) -> QuerySet[WorkflowCallback]:
    if asset.workflow_instance_id is None:
        return WorkflowCallback.objects.none()
    return WorkflowCallback.objects.filter(workflow_instance_id=asset.workflow_instance_id)


def may_decide(user, asset: Asset, *, caller_kind: str) -> bool:
    """Operators and tenant admins decide; anyone else needs the object permission."""
    if caller_kind in (OPERATOR, TENANT_ADMIN):
        return True
    return bool(
        user is not None and user.is_authenticated and user.has_perm("assets.approve_asset", asset)
    )


def may_request_approval(asset: Asset) -> bool:
    return Asset.TRANSITIONS.allows(asset.status, Asset.Status.REQUESTED)
