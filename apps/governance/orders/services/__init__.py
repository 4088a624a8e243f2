"""Governance orders and their owner tasks: the writes, one module per part.

- `approval`: an order requested, decided by its approvers, or cancelled;
- `run`: an approved order started, its phases' owner tasks issued, paused by legal
  holds, and the order completed;
- `owner_tasks`: the tasks answered by their owners, or acted on by operators;
- `overdue`: tasks past their due date flagged, and the minute's round.

Callers name them all, and the NotAllowed they raise, as
`apps.governance.orders.services`. The moves of an order and
of an owner task are the models' `TRANSITIONS` tables, made by `TRANSITIONS.move`; a
refused move raises InvalidTransition with the wording clients know, naming the status
the row is in.
"""

from apps.governance.orders.services.approval import (
    approvals_needed,
    order_cancel,
    order_decide,
    order_request,
)
from apps.governance.orders.services.overdue import advance_orders, flag_overdue_owner_tasks
from apps.governance.orders.services.owner_tasks import (
    owner_task_acknowledge,
    owner_task_complete,
    owner_task_decline,
    owner_task_escalate,
    owner_task_fail,
    owner_task_for_caller,
    owner_task_reassign,
    owner_task_remind,
    owner_task_retry,
    owner_task_tenant,
)
from apps.governance.orders.services.run import (
    ORDER_TOPIC,
    order_complete,
    order_start,
    order_starts_at,
    owner_task_hold,
    owner_task_issue,
    owner_task_topic,
    owner_task_unhold,
    resend_stalled_work,
    resume_held_orders,
    start_due_orders,
)
from apps.governance.permissions import NotAllowed

__all__ = [
    "ORDER_TOPIC",
    "NotAllowed",
    "advance_orders",
    "approvals_needed",
    "flag_overdue_owner_tasks",
    "order_cancel",
    "order_complete",
    "order_decide",
    "order_request",
    "order_start",
    "order_starts_at",
    "owner_task_acknowledge",
    "owner_task_complete",
    "owner_task_decline",
    "owner_task_escalate",
    "owner_task_fail",
    "owner_task_for_caller",
    "owner_task_hold",
    "owner_task_issue",
    "owner_task_reassign",
    "owner_task_remind",
    "owner_task_retry",
    "owner_task_tenant",
    "owner_task_topic",
    "owner_task_unhold",
    "resend_stalled_work",
    "resume_held_orders",
    "start_due_orders",
]
