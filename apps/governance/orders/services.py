"""Governance orders and their owner tasks: the writes.

Approval policy: a production-class tenant needs two approvers other than the
requester, any other tenant one. A rejection ends the order. An order can be
cancelled while it waits for approval. Every step is a link of the order's evidence.

The moves of an order and of an owner task are the models' `TRANSITIONS` tables; a
refused move raises InvalidTransition with the wording clients know, naming the status
the row is in.
"""

from __future__ import annotations

import contextlib
import logging
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import IntegrityError, transaction
from django.db.models import Exists, Max, OuterRef
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR, Actor
from apps.core.enqueue import enqueue_on_commit, send_task
from apps.core.errors import Conflict, InvalidTransition, NotFound, ValidationFailed
from apps.core.outbox import emit
from apps.core.scope import current_scope, system_scope, tenant_scope
from apps.governance.codes import GovernanceCode
from apps.governance.models import GovernanceOrder, GovernanceTask, OrderApproval
from apps.governance.orders import evidence, phases
from apps.governance.permissions import NotAllowed, may_govern, require_governor, require_operator
from apps.governance.retention.selectors import active_legal_holds
from apps.registry.catalog import STEWARD_SERVICE
from apps.registry.selectors import service_list
from apps.registry.services import topic_ensure
from apps.stores import services as stores
from apps.stores.selectors import bindings_holding_tenant_data
from apps.tenancy.audit import audit_record
from apps.tenancy.models import Tenant
from apps.tenancy.services import tenant_set_lifecycle_status

logger = logging.getLogger(__name__)

Status = GovernanceOrder.Status
TaskStatus = GovernanceTask.Status


def approvals_needed(tenant: Tenant) -> int:
    return 2 if tenant.environment_class == Tenant.EnvironmentClass.PRODUCTION else 1


def _the_order_is(status: str) -> str:
    return f"The order is {status}."


def order_request(*, actor: Actor, tenant: Tenant, kind: str, reason: str) -> GovernanceOrder:
    if actor.user is None:
        raise ValidationFailed(
            "A person requests a governance order.", code=GovernanceCode.PERSON_REQUIRED
        )
    if kind not in GovernanceOrder.Kind.values:
        raise ValidationFailed(f"There is no order kind {kind!r}.", field="kind")
    require_governor(actor, tenant.pk, "request a governance order")
    if not reason.strip():
        raise ValidationFailed("Say why.", code=GovernanceCode.REASON_REQUIRED, field="reason")
    with tenant_scope(tenant):
        order = GovernanceOrder.objects.create(
            tenant=tenant,
            kind=kind,
            reason=reason,
            requested_by=actor.user,
            approvals_needed=approvals_needed(tenant),
        )
        evidence.append(
            order,
            "requested",
            by=actor.label,
            reason=reason,
            approvals_needed=order.approvals_needed,
        )
        audit_record(
            actor=actor, action=f"governance.{kind}.request", instance=order, tenant=tenant
        )
    return order


def order_decide(
    *, actor: Actor, order: GovernanceOrder, approve: bool, comment: str = ""
) -> GovernanceOrder:
    """One approver's decision. The requester cannot decide; nobody decides twice; the
    order is approved when enough others have approved, rejected at the first no."""
    if actor.user is None:
        raise ValidationFailed(
            "A person decides a governance order.", code=GovernanceCode.PERSON_REQUIRED
        )
    with tenant_scope(order.tenant_id), transaction.atomic():
        order = GovernanceOrder.objects.select_for_update().get(pk=order.pk)
        decision = Status.APPROVED if approve else Status.REJECTED
        # Refused before anything is recorded: most decisions do not move the order (it
        # waits for more approvals), yet only an order awaiting them takes one.
        if not GovernanceOrder.TRANSITIONS.allows(order.status, decision):
            raise InvalidTransition(_the_order_is(order.status), status=order.status)
        if order.requested_by_id == actor.user.pk:
            raise Conflict(
                "The requester cannot approve their own order.",
                code=GovernanceCode.REQUESTER_CANNOT_DECIDE,
            )
        require_governor(actor, order.tenant_id, "decide a governance order")
        # The policy of the tenant as it is now: reclassified to production while the
        # order waited, it needs the production number of approvers.
        order.approvals_needed = max(order.approvals_needed, approvals_needed(order.tenant))
        try:
            with transaction.atomic():
                OrderApproval.objects.create(
                    order=order,
                    tenant_id=order.tenant_id,
                    approver=actor.user,
                    approve=approve,
                    comment=comment,
                )
        except IntegrityError:
            raise Conflict(
                "You have decided this order already.", code=GovernanceCode.ALREADY_DECIDED
            ) from None
        evidence.append(
            order, "approved" if approve else "rejected", by=actor.label, comment=comment
        )
        approvals = order.approvals.filter(approve=True).count()
        if not approve or approvals >= order.approvals_needed:
            GovernanceOrder.TRANSITIONS.move(
                order,
                decision,
                detail=_the_order_is,
                decided_at=timezone.now(),
                approvals_needed=order.approvals_needed,
            )
            evidence.append(order, f"order_{order.status}", approvals=approvals)
        audit_record(
            actor=actor,
            action=f"governance.{order.kind}.{'approve' if approve else 'reject'}",
            instance=order,
            tenant=order.tenant_id,
        )
    if order.status == Status.APPROVED and order_starts_at(order) <= timezone.now():
        order = order_start(order=order)
    return order


def order_cancel(*, actor: Actor, order: GovernanceOrder, reason: str = "") -> GovernanceOrder:
    """Cancel an order before its first phase begins: while it waits for approval, or
    approved (no phase runs yet). The requester, the tenant's admins or an operator."""
    with tenant_scope(order.tenant_id), transaction.atomic():
        order = GovernanceOrder.objects.select_for_update().get(pk=order.pk)
        if actor.user is None or (
            order.requested_by_id != actor.user.pk and not may_govern(actor.user, order.tenant_id)
        ):
            require_governor(actor, order.tenant_id, "cancel a governance order")
        GovernanceOrder.TRANSITIONS.move(
            order,
            Status.CANCELLED,
            detail=lambda status: (
                f"The order is {status}; only one whose phases have not begun can be cancelled."
            ),
            decided_at=timezone.now(),
        )
        evidence.append(order, "cancelled", by=actor.label, reason=reason)
        audit_record(
            actor=actor,
            action=f"governance.{order.kind}.cancel",
            instance=order,
            tenant=order.tenant_id,
        )
    return order


# --------------------------------------------------------------------------- the run
#
# An approved order starts (a deletion after its cooling-off period, an export at
# once): the tenant is offboarded for a deletion and the first phase's owner tasks are
# issued. Each receipt may complete a phase; the next phase is issued only when every
# task of the current one has completed. Tasks past their due date make the order
# Overdue and raise an alert, once per task, and are still awaited.

ORDER_TOPIC = "governance.order"


def owner_task_topic(owner: str) -> str:
    """`governance.tasks.<owner>`; a service name's hyphens become underscores, as
    topic names allow."""
    return f"governance.tasks.{owner.replace('-', '_')}"


def _ensure_owner_task_topic(owner: str) -> None:
    """The owner's task topic, Steward producing and the owner consuming; the task it
    is made for is announced in the same transaction."""
    topic_ensure(
        name=owner_task_topic(owner),
        description=f"Governance tasks for {owner}: GovernanceTaskIssued, and "
        "GovernanceTaskPaused / GovernanceTaskResumed as legal holds stop and free a purge.",
        producers=[STEWARD_SERVICE],
        consumers=[owner],
    )


def _owner_task_payload(task: GovernanceTask) -> dict:
    step = phases.phase(task.order, task.phase) if task.order_id else None
    return {
        "task": str(task.pk),
        "order": str(task.order_id) if task.order_id else None,
        "order_kind": task.order.kind if task.order_id else None,
        "tenant": str(task.tenant_id),
        "kind": task.kind,
        "phase": task.phase,
        "phase_name": step.slug if step else None,
        "owner": task.owner,
        "store": task.detail.get("store"),
        "detail": task.detail,
        "attempt": task.attempt,
        "due_at": task.due_at.isoformat(),
    }


def owner_task_issue(
    *, tenant_id, owner: str, kind: str, detail: dict, due_at, order=None, phase=None, store_id=None
) -> GovernanceTask:
    """Issue one owner task through the outbox (the caller's tenant scope and
    transaction); Steward's own go to a worker once committed."""
    task = GovernanceTask.objects.create(
        tenant_id=tenant_id,
        order=order,
        phase=phase,
        kind=kind,
        owner=owner,
        store_id=store_id,
        due_at=due_at,
        detail=detail,
    )
    _announce_owner_task(task)
    return task


def _announce_owner_task(task: GovernanceTask) -> None:
    _ensure_owner_task_topic(task.owner)
    emit(
        topic=owner_task_topic(task.owner),
        event_type="GovernanceTaskIssued",
        aggregate_type="governance.task",
        aggregate_id=str(task.pk),
        payload=_owner_task_payload(task),
        tenant=task.tenant_id,
    )
    if task.order_id:
        evidence.append(
            task.order,
            "task_issued",
            task=str(task.pk),
            owner=task.owner,
            task_kind=task.kind,
            phase=task.phase,
            store=task.detail.get("store"),
            attempt=task.attempt,
            due_at=task.due_at.isoformat(),
            # a binding no longer live is named as such: its owner is still asked
            **(
                {
                    "binding": task.detail.get("binding"),
                    "binding_status": task.detail.get("binding_status"),
                    "retired": True,
                }
                if task.detail.get("retired")
                else {}
            ),
        )
    if task.owner == STEWARD_SERVICE:
        enqueue_on_commit("governance.run_steward_task", task_id=str(task.pk))


def owner_task_hold(*, task: GovernanceTask, hold_id) -> None:
    """Pause an open task a legal hold now covers (the caller's tenant scope, the task
    locked): the owner is told to stop on its task topic (GovernanceTaskPaused)."""
    task.held_at = timezone.now()
    task.save(update_fields=["held_at"])
    _announce_to_owner(task, "GovernanceTaskPaused", hold=str(hold_id))
    audit_record(
        actor=SYSTEM_ACTOR,
        action="governance.task.pause",
        instance=task,
        tenant=task.tenant_id,
        changes={"held_at": [None, task.held_at.isoformat()], "hold": [None, str(hold_id)]},
    )


def owner_task_unhold(*, task: GovernanceTask, due_at) -> None:
    """Resume a paused task once no hold covers it: due afresh, the owner told to go on
    (GovernanceTaskResumed)."""
    held_at = task.held_at
    task.held_at = None
    task.due_at = due_at
    task.overdue_at = None
    task.save(update_fields=["held_at", "due_at", "overdue_at"])
    _announce_to_owner(task, "GovernanceTaskResumed")
    audit_record(
        actor=SYSTEM_ACTOR,
        action="governance.task.resume",
        instance=task,
        tenant=task.tenant_id,
        changes={"held_at": [held_at.isoformat() if held_at else None, None]},
    )


def _announce_to_owner(task: GovernanceTask, event_type: str, **extra) -> None:
    emit(
        topic=owner_task_topic(task.owner),
        event_type=event_type,
        aggregate_type="governance.task",
        aggregate_id=str(task.pk),
        payload={**_owner_task_payload(task), **extra},
        tenant=task.tenant_id,
    )


def _owner_task_due_at() -> timezone.datetime:
    return timezone.now() + timedelta(hours=settings.STEWARD_GOVERNANCE_TASK_DUE_HOURS)


def _issue_phase(order: GovernanceOrder, number: int) -> None:
    step = phases.phase(order, number)
    order.phase = number
    order.save(update_fields=["phase"])
    evidence.append(order, "phase_started", phase=number, name=step.slug, title=step.title)
    due = _owner_task_due_at()
    for assignment in phases.assignments(order, number):
        owner_task_issue(
            tenant_id=order.tenant_id,
            owner=assignment.owner,
            kind=assignment.kind,
            detail=assignment.detail,
            due_at=due,
            order=order,
            phase=number,
            store_id=assignment.store_id,
        )


def order_start(*, order: GovernanceOrder) -> GovernanceOrder:
    """Begin an approved order's first phase; idempotent (a started order is returned).
    A deletion offboards the tenant first: its people and services stop writing."""
    with tenant_scope(order.tenant_id), transaction.atomic():
        order = GovernanceOrder.objects.select_for_update().get(pk=order.pk)
        if order.status != Status.APPROVED:
            return order
        if order.kind == GovernanceOrder.Kind.DELETION and _held_by_legal_hold(
            order, "waiting_for_legal_hold"
        ):
            return order
        GovernanceOrder.TRANSITIONS.move(
            order, Status.RUNNING, detail=_the_order_is, started_at=timezone.now()
        )
        if order.kind == GovernanceOrder.Kind.DELETION:
            tenant_set_lifecycle_status(tenant_id=order.tenant_id, status=Tenant.Status.OFFBOARDING)
        evidence.append(order, "started")
        _issue_phase(order, 1)
    return order


def start_due_orders() -> int:
    """Start approved orders whose cooling-off period has passed."""
    grace = timedelta(hours=settings.STEWARD_DELETION_GRACE_HOURS)
    with system_scope():
        due = [
            o
            for o in GovernanceOrder.objects.filter(status=Status.APPROVED)
            if o.kind == GovernanceOrder.Kind.EXPORT or o.decided_at + grace <= timezone.now()
        ]
    for order in due:
        order_start(order=order)
    return len(due)


def order_starts_at(order: GovernanceOrder):
    """When an approved order's first phase begins (cancellable until then)."""
    if order.status != Status.APPROVED:
        return None
    if order.kind == GovernanceOrder.Kind.EXPORT:
        return order.decided_at
    return order.decided_at + timedelta(hours=settings.STEWARD_DELETION_GRACE_HOURS)


def _advance_order(order: GovernanceOrder) -> None:
    """After a task settled (order locked, tenant scope): move to the next phase when
    the current one is done, or finish the order."""
    if not order.in_progress:
        return
    tasks = list(order.tasks.filter(phase=order.phase))
    if order.kind == GovernanceOrder.Kind.EXPORT:
        # An export does not wait on owners that declined, failed or are overdue: the
        # manifest lists what was not included and why.
        if any(t.is_open and t.overdue_at is None for t in tasks):
            return
        if order.status != Status.RUNNING:
            GovernanceOrder.TRANSITIONS.move(order, Status.RUNNING, detail=_the_order_is)
        enqueue_on_commit("governance.assemble_export", order_id=str(order.pk))
        return
    status = Status.OVERDUE if any(t.is_overdue for t in tasks) else Status.RUNNING
    if status != order.status:
        GovernanceOrder.TRANSITIONS.move(order, status, detail=_the_order_is)
    if any(t.status != TaskStatus.COMPLETED for t in tasks):
        return
    if _held_by_legal_hold(order, "paused_by_legal_hold"):
        return  # the finished phase's successor waits; resume_held_orders goes on
    evidence.append(order, "phase_completed", phase=order.phase)
    if order.phase < len(phases.phases_of(order.kind)):
        _issue_phase(order, order.phase + 1)
    else:
        order_complete(order=order)


def _held_by_legal_hold(order: GovernanceOrder, kind: str) -> bool:
    """True while a legal hold keeps the deletion from going on (any active hold of the
    tenant, whatever its scope: deleting the tenant would destroy the data it keeps);
    the first time, the evidence says so with the holds' ids (the order is locked)."""
    holds = list(active_legal_holds(order.tenant_id).values_list("pk", flat=True))
    if not holds:
        return False
    last = order.evidence.order_by("-sequence").values_list("kind", flat=True).first()
    if last != kind:
        evidence.append(order, kind, holds=[str(pk) for pk in holds], phase=order.phase)
    return True


def resume_held_orders() -> int:
    """Go on with deletions a legal hold paused after a phase, once every hold on their
    tenant is released (the minute's round calls it)."""
    with system_scope():
        paused = [
            (o.pk, o.tenant_id)
            for o in GovernanceOrder.objects.filter(
                kind=GovernanceOrder.Kind.DELETION, status__in=[Status.RUNNING, Status.OVERDUE]
            )
            if not active_legal_holds(o.tenant_id).exists()
            and not o.tasks.filter(phase=o.phase).exclude(status=TaskStatus.COMPLETED).exists()
        ]
    for order_id, tenant_id in paused:
        with tenant_scope(tenant_id), transaction.atomic():
            _advance_order(GovernanceOrder.objects.select_for_update().get(pk=order_id))
    return len(paused)


def resend_stalled_work() -> int:
    """The sweep behind Steward's own governance work whose Celery message was lost
    (Redis away when it was sent) or died with its worker (otherwise held for the
    broker's visibility timeout): Steward's open tasks issued more than
    STEWARD_STALLED_WORK_SECONDS ago, and export orders nobody has assembled that long
    after their last answer, go to a worker again. Sending them twice is safe: a task
    run claims its task (apps.governance.steward_owner.services.owner_task_run) and the
    assembly locks its order."""
    cutoff = timezone.now() - timedelta(seconds=settings.STEWARD_STALLED_WORK_SECONDS)
    awaited = GovernanceTask.objects.filter(
        order=OuterRef("pk"), phase=OuterRef("phase"), status__in=GovernanceTask.OPEN
    ).exclude(overdue_at__isnull=False)
    with system_scope():
        tasks = list(
            GovernanceTask.objects.filter(
                owner=STEWARD_SERVICE,
                status__in=GovernanceTask.OPEN,
                held_at=None,
                issued_at__lt=cutoff,
            ).values_list("pk", flat=True)
        )
        orders = list(
            GovernanceOrder.objects.filter(
                kind=GovernanceOrder.Kind.EXPORT,
                status__in=[Status.RUNNING, Status.OVERDUE],
                artifact__isnull=True,
            )
            .exclude(Exists(awaited))
            .annotate(answered=Max("tasks__settled_at"))
            .filter(answered__lt=cutoff)
            .values_list("pk", flat=True)
        )
    for task_id in tasks:
        send_task("governance.run_steward_task", task_id=str(task_id))
    for order_id in orders:
        logger.warning("export order %s: its archive was never built; building it", order_id)
        send_task("governance.assemble_export", order_id=str(order_id))
    return len(tasks) + len(orders)


def order_complete(*, order: GovernanceOrder, **payload) -> None:
    """Close a running order whose last phase is done (locked, its tenant's scope): the
    final evidence, DeletionOrderCompleted or ExportCompleted, the requester told.
    `payload` goes into the evidence and the event (an export's archive)."""
    final = evidence.append(order, "completed", **payload)
    GovernanceOrder.TRANSITIONS.move(
        order,
        Status.COMPLETED,
        detail=_the_order_is,
        completed_at=timezone.now(),
        final_digest=final.digest,
    )
    body = {
        "order": str(order.pk),
        "tenant": str(order.tenant_id),
        "requested_by": order.requested_by.get_username(),
        "completed_at": order.completed_at.isoformat(),
        "evidence_final_digest": order.final_digest,
        "evidence_entries": final.sequence,
        **payload,
    }
    if order.kind == GovernanceOrder.Kind.DELETION:
        tenant_set_lifecycle_status(tenant_id=order.tenant_id, status=Tenant.Status.DELETED)
        event_type = "DeletionOrderCompleted"
    else:
        event_type = "ExportCompleted"
    emit(
        topic=ORDER_TOPIC,
        event_type=event_type,
        aggregate_type="governance.order",
        aggregate_id=str(order.pk),
        payload=body,
        tenant=order.tenant_id,
    )
    audit_record(
        actor=SYSTEM_ACTOR,
        action=f"governance.{order.kind}.complete",
        instance=order,
        tenant=order.tenant_id,
    )
    _notify_requester(order, f"{order.get_kind_display()} completed", _completion_text(order))


def _completion_text(order: GovernanceOrder) -> str:
    if order.kind == GovernanceOrder.Kind.EXPORT:
        return (
            f"The export of tenant {order.tenant.slug} is ready to download from the "
            f"console until {order.artifact.expires_at:%Y-%m-%d %H:%M} UTC."
        )
    return (
        f"Every phase of the deletion of tenant {order.tenant.slug} has completed. "
        f"The evidence's final digest is {order.final_digest}."
    )


def _notify_requester(order: GovernanceOrder, subject: str, text: str) -> None:
    """Email the requester once the transaction commits; a mail failure is logged,
    never raised (the console shows the same)."""
    address = order.requested_by.email
    if not address:
        return

    def send():
        try:
            send_mail(f"[Steward] {subject}", text, None, [address])
        except Exception as exc:  # noqa: BLE001 - any mail transport failure
            logger.warning("could not email %s about order %s: %s", address, order.pk, exc)

    transaction.on_commit(send, robust=True)


# --------------------------------------------------------------------------- owner tasks


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
        actor=actor,
        binding=binding,
        receipt={
            "task": str(task.pk),
            "order": str(task.order_id) if task.order_id else None,
            "kind": task.kind,
            "owner": task.owner,
            **task.receipt,
        },
    )


def owner_task_complete(*, actor: Actor, task_id, receipt: dict) -> GovernanceTask:
    """The owner's receipt: what it deleted or redacted (items with counts) and a
    digest of its own evidence. Completing a phase's last task starts the next."""
    return _owner_task_settle(actor, task_id, TaskStatus.COMPLETED, receipt=receipt)


def owner_task_fail(*, actor: Actor, task_id, reason: str) -> GovernanceTask:
    if not reason.strip():
        raise ValidationFailed(
            "Say what failed.", code=GovernanceCode.REASON_REQUIRED, field="reason"
        )
    return _owner_task_settle(actor, task_id, TaskStatus.FAILED, failure=reason)


def owner_task_decline(*, actor: Actor, task_id, reason: str) -> GovernanceTask:
    """An owner will not contribute an export bundle; the manifest says so."""
    if not reason.strip():
        raise ValidationFailed("Say why.", code=GovernanceCode.REASON_REQUIRED, field="reason")
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
        raise ValidationFailed("Say why.", code=GovernanceCode.REASON_REQUIRED, field="reason")
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
        task.owner = owner
        task.status = TaskStatus.ISSUED
        task.acknowledged_at = task.overdue_at = None
        task.issued_at = timezone.now()
        task.due_at = _owner_task_due_at()
        task.save()
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
        raise ValidationFailed("Say why.", code=GovernanceCode.REASON_REQUIRED, field="reason")
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


# --------------------------------------------------------------------------- overdue


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


# --------------------------------------------------------------------------- the round


def advance_orders() -> dict:
    """The minute's round (beat): start orders whose cooling-off has passed, go on with
    those a released hold paused, send stalled Steward work again, flag overdue tasks."""
    return {
        "started": start_due_orders(),
        "resumed": resume_held_orders(),
        "redriven": resend_stalled_work(),
        "overdue": flag_overdue_owner_tasks(),
    }
