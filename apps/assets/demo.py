"""Assets' demo data (apps.core.setup, `steward_setup --demo`): a draft asset of acme's
and one approved without the Workflow Service."""

from __future__ import annotations

from apps.assets import services
from apps.core.context import SYSTEM_ACTOR
from apps.tenancy.demo import demo_tenant


def install_demo_data(report) -> list[str]:
    actor, acme = SYSTEM_ACTOR, demo_tenant()
    draft = services.asset_create(actor=actor, tenant=acme, name="churn-model v3")
    reviewed = services.asset_create(actor=actor, tenant=acme, name="customer-360 dataset")
    reviewed = services.asset_request_approval(actor=actor, asset=reviewed, delegate=False)
    services.asset_decide(actor=actor, asset=reviewed, approve=True, reason="demo review")
    return [f"two assets: {draft.name}, {reviewed.name}"]
