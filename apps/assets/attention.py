"""What of the assets waits on a person (apps.core.attention): delegations the Workflow
Service refused or that failed, and callback receipts for instances no asset has."""

from __future__ import annotations

from django.urls import reverse

from apps.assets import selectors, services
from apps.assets.codes import AssetCode
from apps.core.attention import Action, Input, Item, Kind, find_row
from apps.core.errors import ValidationFailed
from apps.core.scope import system_scope

REASON = Input("reason", "Reason", kind="textarea")


class FailedDelegations(Kind):
    slug = "failed-delegation"
    title = "Failed delegations"
    description = (
        "An approval request the Workflow Service refused, or whose start failed: delegate it "
        "again once the service is mended, or let a person decide it."
    )
    actions = (
        Action("retry", "Delegate again"),
        Action(
            "decide",
            "Decide by a person",
            (
                Input(
                    "decision",
                    "Decision",
                    kind="choice",
                    choices=(("approved", "Approve"), ("rejected", "Reject")),
                ),
                REASON,
            ),
        ),
    )

    def waiting(self):
        return selectors.delegations_needing_attention()

    def item(self, asset) -> Item:
        return Item(
            key=str(asset.pk),
            title=f"{asset.name} for {asset.tenant.slug} ({asset.delegation_failure})",
            waiting_for=asset.status_reason,
            since=asset.updated_at,
            tenant_id=asset.tenant_id,
            tenant=asset.tenant.slug,
            url=asset.get_absolute_url(),
        )

    def resolve(self, *, actor, row, action, values) -> str:
        if action == "retry":
            services.delegation_retry(asset=row, actor=actor)
            return f"{row.name} is delegated again."
        services.delegation_decide(
            asset=row, actor=actor, decision=values["decision"], reason=values["reason"]
        )
        return f"{row.name} is {values['decision']}."


class UnknownCallbacks(Kind):
    slug = "unknown-callback"
    title = "Callbacks for unknown instances"
    description = (
        "The Workflow Service called back about an instance no asset has (a start whose "
        "answer was lost, or a misdirected call): link it to the asset it was meant for, or "
        "dismiss it with a reason."
    )
    actions = (
        Action(
            "link",
            "Link to an asset",
            (Input("asset", "Asset id"), Input("reason", "Reason", required=False)),
        ),
        Action("dismiss", "Dismiss", (REASON,)),
    )

    def waiting(self):
        return selectors.unknown_instance_callbacks()

    def item(self, receipt) -> Item:
        return Item(
            key=str(receipt.pk),
            title=f"{receipt.decision} for instance {receipt.workflow_instance_id}",
            waiting_for=f"No asset has instance {receipt.workflow_instance_id}.",
            since=receipt.received_at,
            tenant_id=receipt.tenant_id,
            tenant=receipt.tenant.slug if receipt.tenant_id else "",
            url=reverse("assets:asset-list"),
        )

    def resolve(self, *, actor, row, action, values) -> str:
        if action == "dismiss":
            services.callback_dismiss(receipt=row, actor=actor, reason=values["reason"])
            return "Dismissed."
        with system_scope():
            asset = find_row(selectors.asset_list(), values["asset"])
        if asset is None:
            raise ValidationFailed(
                "No asset has that id.", code=AssetCode.UNKNOWN_ASSET, field="asset"
            )
        services.callback_link(receipt=row, asset=asset, actor=actor, reason=values["reason"])
        return f"Linked to {asset.name}."


KINDS = [FailedDelegations(), UnknownCallbacks()]
