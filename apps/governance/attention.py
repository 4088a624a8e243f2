"""What of governance waits on a person (apps.core.attention): overdue owner tasks,
and failed ones that keep an order (or a retention purge) standing still."""

from __future__ import annotations

from django.urls import reverse

from apps.core.attention import Action, Input, Item, Kind
from apps.governance.orders import selectors, services

REASON = Input("reason", "Reason", kind="textarea")


def _item(task, waiting_for: str, since) -> Item:
    what = f"{task.get_kind_display()} by {task.owner} for {task.tenant.slug}"
    return Item(
        key=str(task.pk),
        title=f"{what}{f' ({task.order.get_kind_display()})' if task.order_id else ''}",
        waiting_for=waiting_for,
        since=since,
        tenant_id=task.tenant_id,
        tenant=task.tenant.slug,
        url=task.order.get_absolute_url() if task.order_id else reverse("retention:overview"),
        facts=(("owner", task.owner), ("attempt", str(task.attempt))),
    )


class OverdueTasks(Kind):
    slug = "overdue-task"
    title = "Overdue governance tasks"
    description = (
        "An owning service has not answered its deletion, export or purge task by its due "
        "date: remind it, give the task to another service, or escalate it."
    )
    actions = (
        Action("remind", "Remind the owner"),
        Action("reassign", "Reassign", (Input("owner", "New owner (service name)"), REASON)),
        Action("escalate", "Escalate", (REASON,)),
    )

    def waiting(self):
        return selectors.overdue_tasks()

    def item(self, t) -> Item:
        return _item(t, f"Due {t.due_at:%Y-%m-%d %H:%M} UTC; no receipt yet.", t.overdue_at)

    def resolve(self, *, actor, row, action, values) -> str:
        task = row
        if action == "remind":
            services.owner_task_remind(actor=actor, task_id=task.pk)
            return f"{task.owner} reminded; the task is due afresh."
        if action == "reassign":
            services.owner_task_reassign(
                actor=actor, task_id=task.pk, owner=values["owner"], reason=values["reason"]
            )
            return f"The task is {values['owner']}'s now."
        services.owner_task_escalate(actor=actor, task_id=task.pk, reason=values["reason"])
        return "Escalated: the order's requester and the governance topic are told."


class FailedTasks(Kind):
    slug = "stalled-order"
    title = "Stalled orders and purges"
    description = (
        "An owner reported its task failed: the order (or the purge) stands still until "
        "the task is issued again."
    )
    actions = (Action("retry", "Issue the task again"),)

    def waiting(self):
        return selectors.failed_tasks()

    def item(self, t) -> Item:
        return _item(t, f"Failed: {t.failure}", t.settled_at or t.issued_at)

    def resolve(self, *, actor, row, action, values) -> str:
        services.owner_task_retry(actor=actor, task_id=row.pk)
        return f"Issued again to {row.owner}."


KINDS = [OverdueTasks(), FailedTasks()]
