"""An order's run: an approved order starts (a deletion after its cooling-off period,
an export at once), the tenant is offboarded for a deletion and the first phase's owner
tasks are issued. Each receipt may complete a phase; the next phase is issued only when
every task of the current one has completed. Tasks past their due date make the order
Overdue and raise an alert, once per task, and are still awaited."""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.core.mail import send_mail
from django.db import transaction
from django.db.models import Exists, Max, OuterRef
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.core.enqueue import enqueue_on_commit, send_task
from apps.core.outbox import emit
from apps.core.scope import system_scope, tenant_scope
from apps.governance.models import GovernanceOrder, GovernanceTask
from apps.governance.orders import evidence, phases
from apps.governance.retention.selectors import active_legal_holds
from apps.governance.steward_owner import deletion
from apps.registry.catalog import STEWARD_SERVICE
from apps.registry.services import topic_ensure
from apps.stores.models import LIVE_STATUSES, Store
from apps.stores.selectors import BindingCoverage, binding_erasure_coverage
from apps.tenancy.audit import audit_record
from apps.tenancy.models import Tenant
from apps.tenancy.services import tenant_set_lifecycle_status

logger = logging.getLogger(__name__)

Status = GovernanceOrder.Status
TaskStatus = GovernanceTask.Status


def _the_order_is(status: str) -> str:
    return f"The order is {status}."


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
    _issue_assignments(order, phases.assignments(order, number))


def _issue_assignments(order: GovernanceOrder, assignments: list[phases.Assignment]) -> None:
    """One task per assignment in the order's current phase, all due together."""
    due = _owner_task_due_at()
    for assignment in assignments:
        owner_task_issue(
            tenant_id=order.tenant_id,
            owner=assignment.owner,
            kind=assignment.kind,
            detail=assignment.detail,
            due_at=due,
            order=order,
            phase=order.phase,
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
    last = order.phase == len(phases.phases_of(order.kind))
    if last and not _erasure_covered(order):
        return  # the owners of the bindings not yet reached are asked; it waits for them
    evidence.append(order, "phase_completed", phase=order.phase)
    if not last:
        _issue_phase(order, order.phase + 1)
        return
    deletion.delete_released_rows(order.tenant_id)
    order_complete(order=order)


def _erasure_covered(order: GovernanceOrder) -> bool:
    """Whether a deletion has reached every binding that ever held the tenant's data:
    each has its owner's receipt or a stated reason it never held any
    (apps.stores.selectors.binding_erasure_coverage). When so, the evidence names every
    binding -- store, owner, status, receipt, reason -- before the binding rows are
    deleted. Otherwise the order waits: each binding not reached whose owner has not
    been asked in this phase is given a deletion task (and Steward one to retire it if
    it is still live), the evidence names the bindings waited for, and a task past its
    due date is overdue like any other (the attention queue)."""
    if order.kind != GovernanceOrder.Kind.DELETION:
        return True
    found = binding_erasure_coverage(order.tenant_id)
    # A receipt that settled after its binding was retired is recorded now (the owner's
    # answer comes before the record in owner_task_complete).
    recorded = [
        deletion.record_order_receipt(order, c.binding)
        for c in found
        if not c.covered and c.binding.status not in LIVE_STATUSES
    ]
    if any(recorded):
        found = binding_erasure_coverage(order.tenant_id)
    waiting = [c for c in found if not c.covered]
    if not waiting:
        evidence.append(order, "erasure_covered", bindings=[c.as_dict() for c in found])
        return True
    if _ask_again(order, waiting):
        evidence.append(
            order, "waiting_for_erasure", phase=order.phase, bindings=[c.as_dict() for c in waiting]
        )
    return False


def _ask_again(order: GovernanceOrder, waiting: list[BindingCoverage]) -> bool:
    """Issue, in the order's current phase, a deletion task to the owner of each
    binding not yet reached that no task of this phase names, and Steward's release
    task again when one of them is still live; whether any task was issued."""
    tasks = list(order.tasks.filter(phase=order.phase))
    named = {t.detail.get("binding") for t in tasks}
    issued = []
    for covering in waiting:
        binding = covering.binding
        if str(binding.pk) in named:
            continue
        audit = binding.store.category == Store.Category.AUDIT
        kind = GovernanceTask.Kind.REDACT if audit else GovernanceTask.Kind.DELETE
        issued.append(phases.binding_assignment(binding, kind))
    steward_busy = any(t.owner == STEWARD_SERVICE and t.is_open for t in tasks)
    if not steward_busy and any(c.binding.status in LIVE_STATUSES for c in waiting):
        issued += [a for a in phases.assignments(order, order.phase) if a.owner == STEWARD_SERVICE]
    _issue_assignments(order, issued)
    return bool(issued)


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
