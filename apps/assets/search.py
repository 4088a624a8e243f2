"""Assets (by id, workflow instance id or exact name) and workflow callback receipts
(by workflow instance id) in the console's search (apps.core.search)."""

from __future__ import annotations

from django.db.models import Q
from django.urls import reverse

from apps.assets import selectors
from apps.assets.models import WorkflowCallback
from apps.core.search import Match, Query

SHOWN = 20


def find(query: Query, request) -> list[Match]:
    assets = selectors.asset_list(tenant=request.tenant)
    if query.uuid is not None:
        assets = assets.filter(Q(pk=query.uuid) | Q(workflow_instance_id=query.uuid))
    elif query.name is not None:
        assets = assets.filter(name=query.name)
    else:
        return []
    found = [
        Match(
            "Asset",
            asset.name,
            asset.get_absolute_url(),
            f"{asset.tenant.slug}, {asset.get_status_display().lower()}",
        )
        for asset in assets[:SHOWN]
    ]
    if query.uuid is not None:
        found += [
            Match(
                "Workflow callback",
                str(receipt),
                _receipt_page(receipt),
                receipt.get_outcome_display(),
            )
            for receipt in _receipts_of(query.uuid)[:SHOWN]
        ]
    return found


def _receipts_of(instance_id):
    # Receipts have no list of their own; the instance index serves this lookup.
    return WorkflowCallback.objects.filter(workflow_instance_id=instance_id).order_by(
        "-received_at", "-id"
    )


def _receipt_page(receipt: WorkflowCallback) -> str:
    """A receipt is shown on its asset's page; one with no asset waits in the attention
    queue until a person links or dismisses it."""
    asset_id = receipt.asset_id or receipt.linked_asset_id
    if asset_id is not None:
        return reverse("assets:asset-detail", args=[asset_id])
    return reverse("attention:queue")
