"""Owner tasks answered: acknowledged, completed with a receipt, failed or declined by
their owner; reminded, reassigned, escalated or retried by an operator."""

from __future__ import annotations

import contextlib

from django.db import transaction
from django.utils import timezone

from apps.core.codes import CoreCode
from apps.core.context import SYSTEM_ACTOR, Actor
from apps.core.errors import Conflict, InvalidTransition, NotFound, ValidationFailed
from apps.core.outbox import emit
from apps.core.scope import current_scope, system_scope, tenant_scope
from apps.governance.codes import GovernanceCode
from apps.governance.models import GovernanceOrder, GovernanceTask
from apps.governance.orders import evidence, phases
from apps.governance.orders.services.run import (
    ORDER_TOPIC,
    _advance_order,
    _announce_owner_task,
    _announce_to_owner,
    _notify_requester,
    _owner_task_due_at,
    _owner_task_payload,
    _the_order_is,
)
from apps.governance.permissions import NotAllowed, require_operator
from apps.registry.catalog import STEWARD_SERVICE
from apps.registry.selectors import service_list
from apps.stores import services as stores
from apps.stores.selectors import bindings_holding_tenant_data
from apps.tenancy.audit import audit_record

TaskStatus = GovernanceTask.Status


def owner_task_for_caller(actor: Actor, task_id, *, for_update: bool = True) -> GovernanceTask:
    """The owner task, locked, when the caller is its owner (a service account of that
    name) or an operator; 403/404 otherwise. Another owner's token is told there is no
    such task, exactly as for one that does not exist: owners must not learn which other
    owners' tasks exist. Opens no scope: call inside the task's."""
    query = GovernanceTask.objects.select_related("order")
    task = (
        (query.select_for_update(of=("self",)) if for_update else query).filter(pk=task_id).first()
    )
    if task is None:
        raise NotFound("There is no such governance task.")
    account = actor.service_account
    if actor is SYSTEM_ACTOR:  # Steward's worker, for Steward's own tasks only
        if task.owner != STEWARD_SERVICE:
            raise NotAllowed(f"Steward does not answer for {task.owner}.")
    elif account is not None and account.name != task.owner:
        raise NotFound("There is no such governance task.")
    elif account is None and not (actor.user and actor.user.is_operator):
        raise NotAllowed("Only the task's owner or an operator may act on it.")
    return task


def owner_task_tenant(task_id):
    # Looked up in the caller's scope when it has one (a tenant's caller sees only its
    # own tasks), else across tenants.
    inside = current_scope().tenant_id is not None
    with contextlib.nullcontext() if inside else system_scope():
        tenant_id = (
            GovernanceTask.objects.filter(pk=task_id).values_list("tenant_id", flat=True).first()
        )
    if tenant_id is None:
        raise NotFound("There is no such governance task.")
    return tenant_id


def owner_task_acknowledge(*, actor: Actor, task_id) -> GovernanceTask:
    """The owner has the task; acknowledging twice changes nothing."""
    with tenant_scope(owner_task_tenant(task_id)), transaction.atomic():
        task = owner_task_for_caller(actor, task_id)
        if task.status == TaskStatus.ACKNOWLEDGED:
            return task
        GovernanceTask.TRANSITIONS.move(
            task,
            TaskStatus.ACKNOWLEDGED,
            detail=lambda status: f"The task is {status}.",
            acknowledged_at=timezone.now(),
        )
        if task.order_id:
            evidence.append(task.order, "task_acknowledged", task=str(task.pk), by=actor.label)
    return task


def _lock_order_of(task: GovernanceTask) -> GovernanceOrder | None:
    """The task's order, locked after the task (always in that order), if it has one; a
    purge task of the retention sweep has none."""
    if not task.order_id:
        return None
    return GovernanceOrder.objects.select_for_update().get(pk=task.order_id)


def _owner_task_settle(
    actor: Actor, task_id, status: str, *, receipt=None, failure: str = ""
) -> GovernanceTask:
    with tenant_scope(owner_task_tenant(task_id)), transaction.atomic():
        task = owner_task_for_caller(actor, task_id)
        order = _lock_order_of(task)
        if task.status == status and task.receipt == (receipt or {}) and task.failure == failure:
            return task  # the same answer again: a retried request
        # Only an open task is held or declinable; a settled one is refused by its move,
        # which names the status it is in.
        if status == TaskStatus.COMPLETED and task.is_held:
            raise Conflict(
                "A legal hold pauses this task: the data must stay until the hold is "
                "released (GovernanceTaskResumed says when to go on).",
                code=GovernanceCode.TASK_HELD,
            )
        if (
            status == TaskStatus.DECLINED
            and task.is_open
            and task.kind != GovernanceTask.Kind.EXPORT
        ):
            raise Conflict(
                "Only an export bundle can be declined.", code=GovernanceCode.NOT_DECLINABLE
            )
        GovernanceTask.TRANSITIONS.move(
            task,
            status,
            detail=lambda found: f"The task is {found} already.",
            settled_at=timezone.now(),
            receipt=receipt or {},
            failure=failure,
        )
        if order is not None:
            evidence.append(
                order,
                f"task_{status}",
                task=str(task.pk),
                owner=task.owner,
                by=actor.label,
                **({"receipt": task.receipt} if receipt is not None else {"reason": failure}),
            )
            _advance_order(order)
        if status == TaskStatus.COMPLETED:
            _record_retired_binding_purged(actor, task)
        audit_record(
            actor=actor, action=f"governance.task.{status}", instance=task, tenant=task.tenant_id
        )
    return task


def _record_retired_binding_purged(actor: Actor, task: GovernanceTask) -> None:
    """A completed deletion, redaction or purge task issued for a retired binding
    (`detail.retired`): the owner's receipt says its data is gone, and the binding
    records it (once, audited by stores). A live binding's receipt is not recorded
    here: the binding still holds, or may come to hold, data."""
    kinds = (GovernanceTask.Kind.DELETE, GovernanceTask.Kind.REDACT, GovernanceTask.Kind.PURGE)
    binding_id = task.detail.get("binding")
    if task.kind not in kinds or not task.detail.get("retired") or not binding_id:
        return
    binding = bindings_holding_tenant_data(task.tenant_id).filter(pk=binding_id).first()
    if binding is None or binding.status in phases.LIVE_STATUSES:
        return
    stores.binding_record_data_purged(
        actor=actor, binding=binding, receipt=phases.purge_receipt(task)
    )


def owner_task_complete(*, actor: Actor, task_id, receipt: dict) -> GovernanceTask:
    """The owner's receipt: what it deleted or redacted (items with counts) and a
    digest of its own evidence. Completing a phase's last task starts the next."""
    return _owner_task_settle(actor, task_id, TaskStatus.COMPLETED, receipt=receipt)


def owner_task_fail(*, actor: Actor, task_id, reason: str) -> GovernanceTask:
    if not reason.strip():
        raise ValidationFailed("Say what failed.", code=CoreCode.REASON_REQUIRED, field="reason")
    return _owner_task_settle(actor, task_id, TaskStatus.FAILED, failure=reason)


def owner_task_decline(*, actor: Actor, task_id, reason: str) -> GovernanceTask:
    """An owner will not contribute an export bundle; the manifest says so."""
    if not reason.strip():
        raise ValidationFailed("Say why.", code=CoreCode.REASON_REQUIRED, field="reason")
    return _owner_task_settle(actor, task_id, TaskStatus.DECLINED, failure=reason)


def _overdue_task(
    actor: Actor, task_id, what: str
) -> tuple[GovernanceTask, GovernanceOrder | None]:
    """The open, overdue task an operator acts on (locked, in the caller's transaction and
    the task's tenant scope), with its order locked after it."""
    require_operator(actor, what)
    task = owner_task_for_caller(actor, task_id)
    order = _lock_order_of(task)
    if not task.is_open:
        raise Conflict(
            f"The task is {task.status}: nothing waits on it.", code=GovernanceCode.TASK_SETTLED
        )
    if task.overdue_at is None or task.escalated_at is not None:
        raise Conflict("The task is not overdue.", code=GovernanceCode.TASK_NOT_OVERDUE)
    return task, order


def owner_task_remind(*, actor: Actor, task_id) -> GovernanceTask:
    """Remind an overdue task's owner: announced again (GovernanceTaskReminder on its
    task topic), due afresh, no longer overdue. Audited, and in the order's evidence."""
    with tenant_scope(owner_task_tenant(task_id)), transaction.atomic():
        task, order = _overdue_task(actor, task_id, "remind a task's owner")
        task.reminded_at = timezone.now()
        task.due_at = _owner_task_due_at()
        task.overdue_at = None
        task.save(update_fields=["reminded_at", "due_at", "overdue_at"])
        _announce_to_owner(task, "GovernanceTaskReminder")
        if order is not None:
            evidence.append(order, "task_reminded", task=str(task.pk), by=actor.label)
            _advance_order(order)
        audit_record(
            actor=actor, action="governance.task.remind", instance=task, tenant=task.tenant_id
        )
    return task


def owner_task_reassign(*, actor: Actor, task_id, owner: str, reason: str) -> GovernanceTask:
    """Give an overdue task to another owning service (one the registry knows), with a
    reason: the old owner is told to stop (GovernanceTaskReassigned), the new one gets
    it as issued, due afresh."""
    if not (reason or "").strip():
        raise ValidationFailed("Say why.", code=CoreCode.REASON_REQUIRED, field="reason")
    if not service_list().filter(name=owner).exists():
        raise ValidationFailed(
            f"No service is named {owner!r}.", code=GovernanceCode.UNKNOWN_OWNER, field="owner"
        )
    with tenant_scope(owner_task_tenant(task_id)), transaction.atomic():
        task, order = _overdue_task(actor, task_id, "reassign a governance task")
        if owner == task.owner:
            raise Conflict(f"The task is {owner}'s already.", code=GovernanceCode.SAME_OWNER)
        before = task.owner
        _announce_to_owner(task, "GovernanceTaskReassigned", to=owner, reason=reason)
        # Issued afresh to its new owner, from either open status.
        GovernanceTask.TRANSITIONS.move(
            task,
            TaskStatus.ISSUED,
            from_=GovernanceTask.OPEN,
            owner=owner,
            acknowledged_at=None,
            overdue_at=None,
            issued_at=timezone.now(),
            due_at=_owner_task_due_at(),
        )
        if order is not None:
            evidence.append(
                order,
                "task_reassigned",
                task=str(task.pk),
                by=actor.label,
                owner=owner,
                previous_owner=before,
                reason=reason,
            )
        _announce_owner_task(task)
        if order is not None:
            _advance_order(order)
        audit_record(
            actor=actor,
            action="governance.task.reassign",
            instance=task,
            tenant=task.tenant_id,
            changes={"owner": [before, owner], "reason": [None, reason]},
        )
    return task


def owner_task_escalate(*, actor: Actor, task_id, reason: str) -> GovernanceTask:
    """Escalate an overdue task past its owner: GovernanceTaskEscalated on the
    governance topic (the order's subscribers: a pager, a ticketing bridge), an email to
    the order's requester. It is still awaited; it leaves the attention queue."""
    if not (reason or "").strip():
        raise ValidationFailed("Say why.", code=CoreCode.REASON_REQUIRED, field="reason")
    with tenant_scope(owner_task_tenant(task_id)), transaction.atomic():
        task, order = _overdue_task(actor, task_id, "escalate a governance task")
        task.escalated_at = timezone.now()
        task.save(update_fields=["escalated_at"])
        emit(
            topic=ORDER_TOPIC,
            event_type="GovernanceTaskEscalated",
            aggregate_type="governance.order" if order else "governance.task",
            aggregate_id=str(order.pk if order else task.pk),
            payload={**_owner_task_payload(task), "reason": reason, "by": actor.label},
            tenant=task.tenant_id,
        )
        if order is not None:
            evidence.append(
                order, "task_escalated", task=str(task.pk), by=actor.label, reason=reason
            )
            _notify_requester(
                order,
                f"{order.get_kind_display()}: a task escalated",
                f"The {task.get_kind_display().lower()} task of {task.owner} for tenant "
                f"{order.tenant.slug} is overdue and was escalated by {actor.label}: {reason}",
            )
        audit_record(
            actor=actor,
            action="governance.task.escalate",
            instance=task,
            tenant=task.tenant_id,
            changes={"reason": [None, reason]},
        )
    return task


def owner_task_retry(*, actor: Actor, task_id) -> GovernanceTask:
    """An operator issues a failed task again (a new attempt, a new due date)."""
    require_operator(actor, "retry a governance task")
    with tenant_scope(owner_task_tenant(task_id)), transaction.atomic():
        task = owner_task_for_caller(actor, task_id)
        order = _lock_order_of(task)
        GovernanceTask.TRANSITIONS.move(
            task,
            TaskStatus.ISSUED,
            from_=[TaskStatus.FAILED],
            detail="Only a failed task can be retried.",
            attempt=task.attempt + 1,
            issued_at=timezone.now(),
            due_at=_owner_task_due_at(),
            acknowledged_at=None,
            settled_at=None,
            overdue_at=None,
            escalated_at=None,
            failure="",
            receipt={},
        )
        # The order does not move; a finished one takes no new attempt (the transaction
        # and the task's move with it are rolled back).
        if order is not None and not order.in_progress:
            raise InvalidTransition(_the_order_is(order.status), status=order.status)
        if order is not None:
            evidence.append(order, "task_retried", task=str(task.pk), by=actor.label)
        _announce_owner_task(task)
        audit_record(
            actor=actor, action="governance.task.retry", instance=task, tenant=task.tenant_id
        )
    return task
