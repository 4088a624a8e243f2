from datetime import timedelta

from django.conf import settings
from django.db.models import Count, Exists, OuterRef, Q, QuerySet, Subquery
from django.utils import timezone

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
    """Every callback receipt of the asset, across every instance it ever had, newest
    first. Receipts carry their asset; those recorded before they did (migration 0008
    back-fills them) are found by the current instance too."""
    mine = Q(asset_id=asset.pk)
    if asset.workflow_instance_id is not None:
        # The tenant's own: a platform-wide receipt linked by hand is shown as its copy.
        mine |= Q(
            asset_id__isnull=True,
            tenant_id=asset.tenant_id,
            workflow_instance_id=asset.workflow_instance_id,
        )
    return WorkflowCallback.objects.filter(mine)


# ------------------------------------------------------------- for the attention queue


def delegations_needing_attention(*, tenant=None) -> QuerySet[Asset]:
    """Requested assets whose delegation the Workflow Service refused or that failed,
    oldest first; each is resolved by services.delegation_retry or delegation_decide.
    `status_reason` says why, `delegation_failure` which (refused / failed)."""
    return asset_list(tenant=tenant).delegation_failed().order_by("created_at", "id")


def decision_overdue_days(tenant_slug: str) -> int:
    """How many days a tenant's asset may wait on the Workflow Service's decision."""
    overrides = settings.STEWARD_WORKFLOW_DECISION_OVERDUE_DAYS_BY_TENANT
    return overrides.get(tenant_slug, settings.STEWARD_WORKFLOW_DECISION_OVERDUE_DAYS)


def decisions_overdue(*, now=None) -> QuerySet[Asset]:
    """Assets waiting on the Workflow Service (its start succeeded) for longer than their
    tenant's bound (decision_overdue_days), longest-waiting first; resolved by
    services.delegation_ask (the reconciler, for this asset), delegation_rerequest or
    asset_retire. Waiting since their delegation was recorded (`updated_at`: nothing
    else changes a Requested asset), as the gauge steward_workflow_assets_oldest_wait_seconds
    measures it."""
    now = now or timezone.now()
    overrides = settings.STEWARD_WORKFLOW_DECISION_OVERDUE_DAYS_BY_TENANT
    default = timedelta(days=settings.STEWARD_WORKFLOW_DECISION_OVERDUE_DAYS)
    overdue = Q(updated_at__lt=now - default) & ~Q(tenant__slug__in=list(overrides))
    for slug, days in overrides.items():
        overdue |= Q(tenant__slug=slug, updated_at__lt=now - timedelta(days=days))
    return asset_list().workflow_managed().filter(overdue).order_by("updated_at", "id")


def unknown_instance_callbacks() -> QuerySet[WorkflowCallback]:
    """Callback receipts naming an instance no asset had (or whose asset is gone), not
    yet linked or dismissed, oldest first; resolved by services.callback_link or
    callback_dismiss. One row an instance, its oldest receipt, with `receipts`: how many
    wait (a Workflow Service retrying its callback sends the same instance again, and
    one act resolves them all). Platform-wide receipts are visible in the system scope
    only."""
    unresolved = WorkflowCallback.objects.filter(
        outcome=WorkflowCallback.Outcome.UNKNOWN_INSTANCE,
        resolution=WorkflowCallback.Resolution.NONE,
    )
    same_instance = unresolved.filter(workflow_instance_id=OuterRef("workflow_instance_id"))
    return (
        unresolved.exclude(Exists(same_instance.filter(id__lt=OuterRef("id"))))
        .annotate(
            receipts=Subquery(
                same_instance.order_by()
                .values("workflow_instance_id")
                .annotate(n=Count("id"))
                .values("n")
            )
        )
        .order_by("received_at", "id")
    )


def may_decide(user, asset: Asset, *, caller_kind: str) -> bool:
    """Operators and tenant admins decide; anyone else needs the object permission."""
    if caller_kind in (OPERATOR, TENANT_ADMIN):
        return True
    return bool(
        user is not None and user.is_authenticated and user.has_perm("assets.approve_asset", asset)
    )


def may_request_approval(asset: Asset) -> bool:
    return Asset.TRANSITIONS.allows(asset.status, Asset.Status.REQUESTED)
