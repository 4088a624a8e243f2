"""Asking the Workflow Service about assets that have waited on it for too long: the
periodic reconciler, and a person asking about one asset from the attention queue."""

from __future__ import annotations

import logging
from datetime import timedelta

import httpx
from django.conf import settings
from django.utils import timezone

from apps.assets import workflow
from apps.assets.codes import AssetCode
from apps.assets.models import Asset
from apps.assets.services.callbacks import callback_receive, drain_callbacks
from apps.core.context import Actor
from apps.core.errors import Conflict, DomainError
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.audit import audit_record

logger = logging.getLogger(__name__)

APPLIED, RUNNING, UNKNOWN, UNREACHABLE = "applied", "running", "unknown", "unreachable"


class WorkflowServiceUnavailable(DomainError):
    """The Workflow Service did not answer a question: nothing changed, ask again."""

    code = AssetCode.WORKFLOW_SERVICE_UNAVAILABLE
    status = 503
    title = "The Workflow Service did not answer"


def _reconcile(client: workflow.WorkflowServiceClient, asset: Asset, actor: Actor | None) -> str:
    """Ask about one waiting asset. A final decision the service reports is recorded and
    applied exactly as a callback would be (the asset's receipts show it); an instance
    it does not know is flagged in the asset's history and the log, and left for a
    person; a running one is left alone. Never starts, cancels or changes anything on
    the other side."""
    try:
        state = client.instance_state(asset.workflow_instance_id)
    except httpx.HTTPError as exc:
        logger.warning("asset %s: the Workflow Service did not answer: %s", asset.pk, exc)
        return UNREACHABLE
    if state is None:
        with tenant_scope(asset.tenant_id):
            audit_record(
                actor=actor,
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
        return UNKNOWN
    if state.get("state") == "completed" and state.get("decision") in ("approve", "reject"):
        callback_receive(
            workflow_instance_id=asset.workflow_instance_id,
            approve=state["decision"] == "approve",
            reason=state.get("reason", "") or "reported by the reconciler",
            callback_id=f"reconciler:{asset.workflow_instance_id}",
        )
        drain_callbacks(asset.tenant_id)
        return APPLIED
    return RUNNING


def reconcile_stale_delegations(*, limit: int = 100) -> dict[str, int]:
    """Ask the Workflow Service about assets Requested under a workflow for longer than
    STEWARD_WORKFLOW_RECONCILE_AFTER_MINUTES (see _reconcile). Its schedule is installed
    enabled: it only reads the other side, and a callback lost on the way is its to
    recover before the asset waits on a person (selectors.decisions_overdue). An
    unreachable service is counted and the next asset asked."""
    cutoff = timezone.now() - timedelta(minutes=settings.STEWARD_WORKFLOW_RECONCILE_AFTER_MINUTES)
    with system_scope():
        stale = list(Asset.objects.workflow_managed().filter(updated_at__lt=cutoff)[:limit])
    client = workflow.WorkflowServiceClient()
    counts = {APPLIED: 0, RUNNING: 0, UNKNOWN: 0, UNREACHABLE: 0}
    for asset in stale:
        counts[_reconcile(client, asset, None)] += 1
    return counts


ANSWERS = {
    APPLIED: "The Workflow Service had decided it: the decision is applied.",
    RUNNING: "The Workflow Service is still deciding it.",
    UNKNOWN: "The Workflow Service does not know its instance: delegate it again or retire it.",
}


def delegation_ask(*, asset: Asset, actor: Actor) -> str:
    """A person asks the Workflow Service about one asset waiting on it (the attention
    queue's overdue-decision); what the service said, in a sentence. Audited."""
    with system_scope():
        waiting = Asset.objects.workflow_managed().filter(pk=asset.pk).first()
    if waiting is None:
        raise Conflict(
            "The asset does not wait on the Workflow Service.",
            code=AssetCode.NOT_WAITING_ON_WORKFLOW,
        )
    outcome = _reconcile(workflow.WorkflowServiceClient(), waiting, actor)
    if outcome == UNREACHABLE:
        raise WorkflowServiceUnavailable("The Workflow Service did not answer: ask again later.")
    with tenant_scope(waiting.tenant_id):
        audit_record(
            actor=actor,
            action="asset.workflow_asked",
            instance=waiting,
            tenant=waiting.tenant_id,
            changes={"answer": [None, outcome]},
        )
    return ANSWERS[outcome]
