"""The error codes the assets app answers with (apps.core.codes)."""

from __future__ import annotations

from apps.core.codes import Codes


class AssetCode(Codes):
    # Assets and their approval
    AWAITING_DECISION = (
        "asset_awaiting_decision",
        "A requested asset's name and description change only once it is decided.",
    )
    NOT_DELETABLE = "asset_not_deletable", "Only a draft asset can be deleted."
    WORKFLOW_MANAGED = (
        "workflow_managed",
        "The Workflow Service decides this asset: a person cannot.",
    )
    # Delegations that wait on a person
    DELEGATION_NOT_FAILED = (
        "delegation_not_failed",
        "The asset's delegation has not failed: there is nothing to retry or decide.",
    )
    NOT_WAITING_ON_WORKFLOW = (
        "not_waiting_on_workflow",
        "The asset does not wait on the Workflow Service: nothing to ask or delegate again.",
    )
    WORKFLOW_SERVICE_UNAVAILABLE = (
        "workflow_service_unavailable",
        "The Workflow Service did not answer Steward's question; nothing changed.",
    )
    INVALID_DECISION = "invalid_decision", "A person's decision is approved or rejected."
    INVALID_REFERENCE = (
        "invalid_reference",
        "A Workflow Service instance id given to settle a start is not a UUID.",
    )
    UNKNOWN_ASSET = "unknown_asset", "No asset has the id given to link a callback to."
    # Callbacks for an instance no asset had
    CALLBACK_NOT_UNKNOWN = (
        "callback_not_unknown",
        "The callback's instance was known: it needs no one to link or dismiss it.",
    )
    CALLBACK_ALREADY_RESOLVED = (
        "callback_already_resolved",
        "The callback was linked or dismissed already.",
    )
    CALLBACK_TENANT_MISMATCH = (
        "callback_tenant_mismatch",
        "The callback came for another tenant's asset.",
    )
    NOT_REQUESTED = (
        "asset_not_requested",
        "The asset was never requested: no workflow decides it.",
    )
    WORKFLOW_INSTANCE_LINKED = (
        "workflow_instance_linked",
        "Another asset has the callback's workflow instance: an instance decides one asset.",
    )
    CALLBACK_INSTANCE_MISMATCH = (
        "callback_instance_mismatch",
        "The asset waits on another workflow instance.",
    )
    # The Workflow Service's callback endpoint
    CALLBACKS_DISABLED = "callbacks_disabled", "Callbacks are not configured (no shared secret)."
    SIGNATURE_MISSING = (
        "signature_missing",
        "A callback lacks its webhook-id, webhook-timestamp or webhook-signature header.",
    )
    BAD_TIMESTAMP = "bad_timestamp", "A callback's webhook-timestamp is not a number of seconds."
    STALE_TIMESTAMP = (
        "stale_timestamp",
        "A callback's timestamp is too far from now (a replay, or a skewed clock).",
    )
    BAD_SIGNATURE = "bad_signature", "A callback's signature does not match its body."
    UNKNOWN_WORKFLOW_INSTANCE = (
        "unknown_workflow_instance",
        "No asset waits on the callback's workflow instance; the receipt is kept for operators.",
    )
