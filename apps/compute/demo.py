"""Compute's demo data (apps.core.setup, `steward_setup --demo`): two batches of acme's
demo workflow, one finished and one running."""

from __future__ import annotations

from apps.compute.services import batch_set_status, batch_submit
from apps.core.context import SYSTEM_ACTOR
from apps.tenancy.demo import demo_tenant


def install_demo_data(report) -> list[str]:
    acme = demo_tenant()
    for step, final in (("train-model", "succeeded"), ("score-batch", None)):
        batch, _ = batch_submit(
            actor=SYSTEM_ACTOR,
            tenant=acme,
            idempotency_key=f"demo-{step}",
            workflow_instance_id="demo-workflow-1",
            workflow_step_id=step,
        )
        batch_set_status(actor=SYSTEM_ACTOR, batch=batch, status="running")
        if final:
            batch_set_status(
                actor=SYSTEM_ACTOR, batch=batch, status=final, result_summary={"rows": 1200}
            )
    return ["two compute batches"]
