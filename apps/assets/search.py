"""Assets (by id, workflow instance id, or name: exact, its start in any case, or one
like it; apps.core.search.named) and workflow callback receipts (by workflow instance
id) in the console's search (apps.core.search)."""

from __future__ import annotations

from django.db.models import Q
from django.urls import reverse

from apps.assets import selectors
from apps.assets.models import WorkflowCallback
from apps.core.search import Match, Query, named

SHOWN = 20


def find(query: Query, request) -> list[Match]:
    assets = selectors.asset_list(tenant=request.tenant)
    if query.uuid is not None:
        shown = list(assets.filter(Q(pk=query.uuid) | Q(workflow_instance_id=query.uuid))[:SHOWN])
    elif query.name is not None:
        shown = _named(assets, query.name)
    else:
        return []
    found = [
        Match(
            "Asset",
            asset.name,
            asset.get_absolute_url(),
            f"{asset.tenant.slug}, {asset.get_status_display().lower()}",
        )
        for asset in shown
    ]
    if query.uuid is not None:
        receipts = list(_receipts_of(query.uuid)[:SHOWN])
        # A receipt outlives its asset (it holds the asset's identifier): one whose asset
        # was deleted is listed without a link, rather than with one to a missing page.
        named = {receipt.asset_id or receipt.linked_asset_id for receipt in receipts}
        named.discard(None)
        existing = (
            set(
                selectors.asset_list(tenant=request.tenant)
                .filter(pk__in=named)
                .values_list("pk", flat=True)
            )
            if named
            else set()
        )
        found += [_receipt_match(receipt, existing) for receipt in receipts]
    return found


def _named(assets, name: str) -> list:
    # name_folded is the generated column the asset_name_prefix index orders; asset_name
    # and asset_name_trgm serve the exact and the alike.
    return named(assets, name, folded="name_folded", shown=SHOWN)


def _receipt_match(receipt: WorkflowCallback, existing: set) -> Match:
    outcome = receipt.get_outcome_display()
    asset_id = receipt.asset_id or receipt.linked_asset_id
    if asset_id is None:
        # One with no asset waits in the attention queue until a person links or
        # dismisses it.
        return Match("Workflow callback", str(receipt), reverse("attention:queue"), outcome)
    if asset_id not in existing:
        return Match("Workflow callback", str(receipt), "", f"{outcome}; its asset was deleted")
    return Match(
        "Workflow callback",
        str(receipt),
        reverse("assets:asset-detail", args=[asset_id]),
        outcome,
    )


def _receipts_of(instance_id):
    # Receipts have no list of their own; the instance index serves this lookup.
    return WorkflowCallback.objects.filter(workflow_instance_id=instance_id).order_by(
        "-received_at", "-id"
    )
