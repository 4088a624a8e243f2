"""Asset approval: by a person, or delegated to the Workflow Service.

The writes, one module a concern: `lifecycle` (an asset's own moves), `delegation`
(the start call and its outcome), `callbacks` (the Workflow Service's decisions),
`unknown_callbacks` (those no asset knew) and `reconciliation`. Callers use them
through this package.
"""

from apps.assets.services.callbacks import (
    Receipt,
    apply_pending_callbacks,
    callback_kick_key,
    callback_receive,
    drain_all_callbacks,
    drain_callbacks,
    has_pending_callbacks,
    kick_callback_worker,
)
from apps.assets.services.delegation import (
    asset_delegate,
    asset_of_start,
    asset_record_delegation,
    asset_record_delegation_failure,
    delegation_decide,
    delegation_pending,
    delegation_rerequest,
    delegation_retry,
    record_failed_start,
    record_started_instance,
    resume_lost_delegations,
)
from apps.assets.services.events import TOPIC
from apps.assets.services.lifecycle import (
    asset_create,
    asset_decide,
    asset_delete,
    asset_request_approval,
    asset_retire,
    asset_update,
)
from apps.assets.services.reconciliation import (
    WorkflowServiceUnavailable,
    delegation_ask,
    reconcile_stale_delegations,
)
from apps.assets.services.unknown_callbacks import callback_dismiss, callback_link

__all__ = [
    "TOPIC",
    "Receipt",
    "WorkflowServiceUnavailable",
    "apply_pending_callbacks",
    "asset_create",
    "asset_decide",
    "asset_delegate",
    "asset_delete",
    "asset_of_start",
    "asset_record_delegation",
    "asset_record_delegation_failure",
    "asset_request_approval",
    "asset_retire",
    "asset_update",
    "callback_dismiss",
    "callback_kick_key",
    "callback_link",
    "callback_receive",
    "delegation_ask",
    "delegation_decide",
    "delegation_pending",
    "delegation_rerequest",
    "delegation_retry",
    "drain_all_callbacks",
    "drain_callbacks",
    "has_pending_callbacks",
    "kick_callback_worker",
    "reconcile_stale_delegations",
    "record_failed_start",
    "record_started_instance",
    "resume_lost_delegations",
]
