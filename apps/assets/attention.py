"""What of the assets waits on a person (apps.core.attention): delegations the Workflow
Service refused or that failed, delegations whose decision never came, and callback
receipts for instances no asset has."""

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


class OverdueDecisions(Kind):
    slug = "overdue-decision"
    title = "Decisions that never came"
    description = (
        "The Workflow Service took an approval request and has not decided it within the "
        "tenant's bound (STEWARD_WORKFLOW_DECISION_OVERDUE_DAYS, 7 days unless set): ask "
        "the service (a decision it made is applied), delegate it again as a new request, "
        "or retire the asset with a reason."
    )
    actions = (
        Action("ask", "Ask the Workflow Service"),
        Action("rerequest", "Delegate again"),
        Action(
            "retire",
            "Retire",
            (REASON,),
            confirm="The request is withdrawn and the asset retired; a late decision is ignored.",
        ),
    )

    def waiting(self):
        return selectors.decisions_overdue()

    def item(self, asset) -> Item:
        days = selectors.decision_overdue_days(asset.tenant.slug)
        return Item(
            key=str(asset.pk),
            title=f"{asset.name} for {asset.tenant.slug}",
            waiting_for=(
                f"No decision from workflow instance {asset.workflow_instance_id} in {days} day(s)."
            ),
            since=asset.updated_at,
            tenant_id=asset.tenant_id,
            tenant=asset.tenant.slug,
            url=asset.get_absolute_url(),
            facts=(("Workflow instance", str(asset.workflow_instance_id)),),
        )

    def resolve(self, *, actor, row, action, values) -> str:
        if action == "ask":
            return services.delegation_ask(asset=row, actor=actor)
        if action == "rerequest":
            services.delegation_rerequest(asset=row, actor=actor)
            return f"{row.name} is delegated again, as a new request."
        services.asset_retire(actor=actor, asset=row, reason=values["reason"])
        return f"{row.name} is retired."


class UnknownCallbacks(Kind):
    slug = "unknown-callback"
    title = "Callbacks for unknown instances"
    description = (
        "The Workflow Service called back about an instance no asset has (a start whose "
        "answer was lost, or a misdirected call): link it to the asset it was meant for, or "
        "dismiss it with a reason. Every callback for one instance is one item, resolved "
        "together."
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
            facts=(("Callbacks", str(getattr(receipt, "receipts", 1))),),
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


KINDS = [FailedDelegations(), OverdueDecisions(), UnknownCallbacks()]
