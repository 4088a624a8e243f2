"""The stable error codes governance raises: orders and their owner tasks, export
bundles, retention rules and legal holds, and who may govern a tenant."""

from __future__ import annotations

from apps.core.codes import Codes


class GovernanceCode(Codes):
    # who may act
    NOT_ALLOWED = (
        "not_allowed",
        "The caller may not do this: it is for the tenant's admins, an operator, or the "
        "task's owner.",
    )
    PERSON_REQUIRED = (
        "person_required",
        "A person signed in does this, not a service token.",
    )

    # orders
    REQUESTER_CANNOT_DECIDE = (
        "requester_cannot_decide",
        "The person who requested an order cannot approve or reject it.",
    )
    ALREADY_DECIDED = "already_decided", "You have approved or rejected this order already."

    # owner tasks
    TASK_HELD = (
        "task_held",
        "A legal hold pauses the task: its receipt is refused until the hold is released.",
    )
    NOT_DECLINABLE = "not_declinable", "Only an export task's bundle can be declined."
    TASK_SETTLED = "task_settled", "The task is settled: nothing waits on it."
    TASK_NOT_OVERDUE = (
        "task_not_overdue",
        "Only an overdue task, not yet escalated, can be reminded, reassigned or escalated.",
    )
    UNKNOWN_OWNER = "unknown_owner", "No service of that name is registered to own the task."
    SAME_OWNER = "same_owner", "The task belongs to that owner already."

    # export bundles
    UNSUPPORTED_BUNDLE_TYPE = (
        "unsupported_bundle_type",
        "A bundle's Content-Type must be JSON Lines, Parquet or Markdown.",
    )
    CHECKSUM_REQUIRED = (
        "checksum_required",
        "Declare the bundle's SHA-256 (64 hex digits) in the Content-SHA256 header.",
    )
    CHECKSUM_MISMATCH = (
        "checksum_mismatch",
        "The bundle's SHA-256 is not the one declared; nothing was kept.",
    )
    BUNDLE_TOO_LARGE = (
        "bundle_too_large",
        "The bundle is larger than STEWARD_EXPORT_BUNDLE_MAX_BYTES (the `limit` member).",
    )
    BUNDLE_UNREADABLE = "bundle_unreadable", "The bundle does not read as its format."

    # retention rules and legal holds
    NAME_REQUIRED = "name_required", "Name the retention rule."
    NAME_TAKEN = "name_taken", "Another retention rule has that name."
    SCOPE_REQUIRED = (
        "scope_required",
        "A retention rule covers a data class, a store, or a store of a data class.",
    )
    SCOPE_MISMATCH = (
        "scope_mismatch",
        "The store named does not hold data of the data class named: the rule or hold would "
        "cover nothing.",
    )
    INVALID_PERIOD = "invalid_period", "A retention period is a whole number of days, at least 1."
    RETENTION_PERIOD_BELOW_MINIMUM = (
        "retention_period_below_minimum",
        "Steward's handled-event receipts are kept at least their deduplication window "
        "(3 days): a shorter rule would let a re-driven event be handled twice.",
    )
    RETENTION_ACTION_UNSUPPORTED = (
        "retention_action_unsupported",
        "Steward's own data takes only some actions: it keeps no archive, and its audit "
        "trail is redacted, never deleted.",
    )
    LOCKED_RULE_DISABLED = (
        "locked_rule_disabled",
        "A locked retention rule stays enabled.",
    )
    RETENTION_RULE_LOCKED = (
        "retention_rule_locked",
        "A locked retention rule refuses the change: its period may only grow.",
    )
    HOLD_RELEASED = "hold_released", "The legal hold is released already."
