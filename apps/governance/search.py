"""Governance orders and owner tasks by id in the console's search (apps.core.search),
for operators and tenant admins, as the governance pages."""

from __future__ import annotations

from django.urls import reverse

from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, caller_kind
from apps.core.search import Match, Query
from apps.governance.orders import selectors

SHOWN = 20


def find(query: Query, request) -> list[Match]:
    if query.uuid is None or caller_kind(request) not in (OPERATOR, TENANT_ADMIN):
        return []
    orders = selectors.order_list().prefetch_related(None).filter(pk=query.uuid)
    found = [
        Match(
            "Governance order",
            f"{order.get_kind_display()} of {order.tenant.slug}",
            order.get_absolute_url(),
            order.get_status_display(),
        )
        for order in orders[:SHOWN]
    ]
    tasks = selectors.owner_task_list().filter(pk=query.uuid)
    found += [
        Match(
            "Governance task",
            f"{task.get_kind_display()} by {task.owner} for {task.tenant.slug}",
            # A retention purge belongs to no order: it is shown on the retention pages.
            task.order.get_absolute_url()
            if task.order_id is not None
            else reverse("retention:overview"),
            task.get_status_display(),
        )
        for task in tasks[:SHOWN]
    ]
    return found
