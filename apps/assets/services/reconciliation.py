"""Asking the Workflow Service about assets that have waited on it for too long."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from apps.assets import workflow
from apps.assets.models import Asset
from apps.assets.services.callbacks import callback_receive, drain_callbacks
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.audit import audit_record

logger = logging.getLogger(__name__)


def reconcile_stale_delegations(*, limit: int = 100) -> dict[str, int]:
    """Ask the Workflow Service about assets Requested under a workflow for too long.

    Opt-in (its schedule is installed disabled). A final decision the service reports
    is recorded and applied exactly as a callback would be; an instance it does not know is flagged
    in the asset's history and the log, and left for a person. Running instances are
    left alone. It never starts, cancels or changes anything on the other side.
    """
    cutoff = timezone.now() - timedelta(minutes=settings.STEWARD_WORKFLOW_RECONCILE_AFTER_MINUTES)
    with system_scope():
        stale = list(Asset.objects.workflow_managed().filter(updated_at__lt=cutoff)[:limit])
    client = workflow.WorkflowServiceClient()
    counts = {"applied": 0, "running": 0, "unknown": 0}
    for asset in stale:
        state = client.instance_state(asset.workflow_instance_id)
        if state is None:
            with tenant_scope(asset.tenant_id):
                audit_record(
                    actor=None,
                    action="asset.workflow_unknown",
                    instance=asset,
                    tenant=asset.tenant_id,
                    changes={"workflow_instance_id": [str(asset.workflow_instance_id)] * 2},
                )
            logger.warning(
                "asset %s waits on workflow %s, which the Workflow Service does not know",
                asset.pk,
                asset.workflow_instance_id,
            )
            counts["unknown"] += 1
        elif state.get("state") == "completed" and state.get("decision") in ("approve", "reject"):
            # Recorded and applied like a callback, so the asset's receipts show it.
            callback_receive(
                workflow_instance_id=asset.workflow_instance_id,
                approve=state["decision"] == "approve",
                reason=state.get("reason", "") or "reported by the reconciler",
                callback_id=f"reconciler:{asset.workflow_instance_id}",
            )
            drain_callbacks(asset.tenant_id)
            counts["applied"] += 1
        else:
            counts["running"] += 1
    return counts
