"""Reads of orders and their owner tasks: orders with their progress, owner tasks as
their owners see them, the orders a governor should look at."""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Prefetch, Q, QuerySet
from django.utils import timezone

from apps.governance.models import ExportArtifact, GovernanceOrder, GovernanceTask, OrderApproval
from apps.governance.orders import phases
from apps.stores.selectors import binding_erasure_coverage
from apps.tenancy.models import Tenant


def order_list() -> QuerySet[GovernanceOrder]:
    """Orders with what their pages and API answers show: tenant, requester, approvals,
    owner tasks and the export archive, fetched once for any number of orders."""
    return GovernanceOrder.objects.select_related(
        "tenant", "requested_by", "artifact"
    ).prefetch_related(
        Prefetch("approvals", queryset=OrderApproval.objects.select_related("approver")),
        Prefetch("tasks", queryset=GovernanceTask.objects.select_related("store", "tenant")),
    )


def owner_task_list(*, owner: str | None = None) -> QuerySet[GovernanceTask]:
    tasks = GovernanceTask.objects.select_related("store", "order", "tenant")
    return tasks.filter(owner=owner) if owner is not None else tasks


def overdue_tasks() -> QuerySet[GovernanceTask]:
    """Open tasks past their due date that no person has handled yet: not paused by a
    hold, not escalated. An operator reminds, reassigns or escalates each."""
    return (
        owner_task_list()
        .filter(
            status__in=GovernanceTask.OPEN,
            overdue_at__isnull=False,
            held_at=None,
            escalated_at=None,
        )
        .order_by("overdue_at", "id")
    )


def failed_tasks() -> QuerySet[GovernanceTask]:
    """Tasks their owner reported failed: the order (or the retention purge) stands
    still until an operator issues the task again."""
    return (
        owner_task_list().filter(status=GovernanceTask.Status.FAILED).order_by("settled_at", "id")
    )


def export_artifact_of(order: GovernanceOrder) -> ExportArtifact | None:
    """The record of the order's archive, if it has one (order_list joins it)."""
    try:
        return order.artifact
    except ExportArtifact.DoesNotExist:
        return None


def tenant_choices() -> QuerySet[Tenant]:
    """The tenants a request for an order or a hold may name (by slug)."""
    return Tenant.objects.all()


def order_progress(order: GovernanceOrder) -> list[dict]:
    """Each phase with its state (done, current, waiting) and its tasks' counts, for the
    progress bar."""
    tasks = list(order.tasks.all())
    steps = []
    for step in phases.phases_of(order.kind):
        mine = [t for t in tasks if t.phase == step.number]
        if order.status == GovernanceOrder.Status.COMPLETED or step.number < order.phase:
            state = "done"
        elif step.number == order.phase and order.in_progress:
            state = "overdue" if any(t.is_overdue for t in mine) else "current"
        else:
            state = "waiting"
        steps.append(
            {
                "number": step.number,
                "slug": step.slug,
                "title": step.title,
                "state": state,
                "tasks": len(mine),
                "completed": sum(t.status == GovernanceTask.Status.COMPLETED for t in mine),
            }
        )
    return steps


def order_percent_done(order: GovernanceOrder) -> int:
    if order.status == GovernanceOrder.Status.COMPLETED:
        return 100
    steps = order_progress(order)
    done = sum(
        1 if s["state"] == "done" else (s["completed"] / s["tasks"] if s["tasks"] else 0)
        for s in steps
    )
    return int(100 * done / len(steps))


def orders_needing_attention(user) -> list[GovernanceOrder]:
    """Orders a governor should look at now: overdue ones, ones waiting for approval
    by someone other than their requester, and the user's own exports ready to
    download. In the caller's scope (RLS decides which tenants)."""
    Status = GovernanceOrder.Status
    return list(
        order_list()
        .filter(
            Q(status=Status.OVERDUE)
            | (Q(status=Status.REQUESTED) & ~Q(requested_by=user) & ~Q(approvals__approver=user))
            | Q(
                requested_by=user,
                kind=GovernanceOrder.Kind.EXPORT,
                status=Status.COMPLETED,
                completed_at__gte=timezone.now() - timedelta(days=7),
            )
        )
        .distinct()
        .order_by("-created_at")[:20]
    )


def erasure_waits(order: GovernanceOrder) -> list[dict]:
    """The bindings a deletion in its last phase still waits for before it may complete
    (store, owner, status and what it waits for: apps.stores.selectors
    .binding_erasure_coverage); empty for any other order. In the caller's scope."""
    last = len(phases.phases_of(order.kind))
    if order.kind != GovernanceOrder.Kind.DELETION or not order.in_progress or order.phase != last:
        return []
    return [c.as_dict() for c in binding_erasure_coverage(order.tenant_id) if not c.covered]
