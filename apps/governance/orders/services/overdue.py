"""Tasks past their due date, and the minute's round that flags them along with the
orders' other periodic work."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from apps.core.outbox import emit
from apps.core.scope import system_scope, tenant_scope
from apps.governance.models import GovernanceTask
from apps.governance.orders import evidence
from apps.governance.orders.services.owner_tasks import _lock_order_of
from apps.governance.orders.services.run import (
    ORDER_TOPIC,
    _advance_order,
    _notify_requester,
    _owner_task_payload,
    resend_stalled_work,
    resume_held_orders,
    start_due_orders,
)


def flag_overdue_owner_tasks() -> int:
    """Mark every open task past its due date overdue, once: evidence, an event, an
    email to the order's requester, and the order Overdue. Nothing is skipped."""
    now = timezone.now()
    with system_scope():
        late = list(
            GovernanceTask.objects.filter(
                status__in=GovernanceTask.OPEN, overdue_at=None, held_at=None, due_at__lt=now
            ).values_list("pk", "tenant_id")
        )
    flagged = 0
    for task_id, tenant_id in late:
        with tenant_scope(tenant_id), transaction.atomic():
            task = (
                GovernanceTask.objects.select_for_update(of=("self",))
                .select_related("order")
                .get(pk=task_id)
            )
            if not task.is_open or task.overdue_at is not None or task.is_held:
                continue
            order = _lock_order_of(task)
            task.overdue_at = now
            task.save(update_fields=["overdue_at"])
            payload = {**_owner_task_payload(task), "overdue_since": task.due_at.isoformat()}
            emit(
                topic=ORDER_TOPIC,
                event_type="GovernanceTaskOverdue",
                aggregate_type="governance.order" if order else "governance.task",
                aggregate_id=str(order.pk if order else task.pk),
                payload=payload,
                tenant=tenant_id,
            )
            if order is not None:
                evidence.append(
                    order,
                    "task_overdue",
                    task=str(task.pk),
                    owner=task.owner,
                    due_at=payload["due_at"],
                )
                _advance_order(order)
                _notify_requester(
                    order,
                    f"{order.get_kind_display()} overdue",
                    f"The {task.get_kind_display().lower()} task of {task.owner} for tenant "
                    f"{order.tenant.slug} was due at {task.due_at:%Y-%m-%d %H:%M} UTC and has "
                    "not completed. The order keeps waiting for it.",
                )
            flagged += 1
    return flagged


def advance_orders() -> dict:
    """The minute's round (beat): start orders whose cooling-off has passed, go on with
    those a released hold paused, send stalled Steward work again, flag overdue tasks."""
    return {
        "started": start_due_orders(),
        "resumed": resume_held_orders(),
        "redriven": resend_stalled_work(),
        "overdue": flag_overdue_owner_tasks(),
    }
