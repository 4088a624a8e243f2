"""The governance console: orders with their phases as a progress bar, their tasks and
receipts, the approve/reject/cancel/retry actions, evidence and export downloads."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.generic import DetailView

from apps.console.confirm import confirmed
from apps.console.listing import Column, ListPage
from apps.console.manage_views import submit_form
from apps.console.progress import reload_when_moved
from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, caller_kind
from apps.core.errors import DomainError
from apps.core.view_scope import platform_scope
from apps.governance.models import GovernanceOrder
from apps.governance.orders import evidence, selectors, services
from apps.governance.orders.filters import OrderFilterSet
from apps.governance.orders.forms import OrderForm
from apps.governance.retention.selectors import active_legal_holds
from apps.tenancy.selectors import tenants_visible_to

GOVERNORS = (OPERATOR, TENANT_ADMIN)
RELATED = (("Orders", "governance:order-list"),)
# While an order runs, workers and owners move it without anyone submitting a form: its
# page asks for its progress this often (seconds). Cooling off lasts hours, so the page
# asks only now and then whether it has started.
POLL_SECONDS = {
    GovernanceOrder.Status.APPROVED: 60,
    GovernanceOrder.Status.RUNNING: 2,
    GovernanceOrder.Status.OVERDUE: 2,
}


def _require_governor(request) -> None:
    if caller_kind(request) not in GOVERNORS:
        raise PermissionDenied


class GovernorsOnlyMixin:
    """Operators and tenant admins; anyone else signed in is refused (403)."""

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated:
            _require_governor(request)
        return super().dispatch(request, *args, **kwargs)


class OrderListView(GovernorsOnlyMixin, ListPage):
    title = "Governance orders"
    steward_scope = "system"  # operators see every tenant's orders
    filterset_class = OrderFilterSet
    search_fields = ("tenant__slug", "reason", "requested_by__username")
    default_ordering = "-created_at"
    related_pages = RELATED
    create = ("New order", "governance:order-new", set(GOVERNORS))
    columns = (
        Column("Order", "get_kind_display", sort="kind", link=True),
        Column("Tenant", "tenant.slug", sort="tenant__slug"),
        Column("Status", "get_status_display", sort="status"),
        Column("Phase", "phase"),
        Column("Requested by", "requested_by.username"),
        Column("Requested", "created_at", sort="created_at"),
    )

    def get_base_queryset(self):
        return selectors.order_list()


class OrderDetailView(GovernorsOnlyMixin, LoginRequiredMixin, DetailView):
    template_name = "governance/order_detail.html"
    context_object_name = "order"
    steward_scope = "system"

    def get_queryset(self):
        return selectors.order_list()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.update(_order_context(self.request, self.object), related_pages=RELATED)
        return context


def _order_context(request, order: GovernanceOrder) -> dict:
    document = evidence.document(order)
    user = request.user
    moves = GovernanceOrder.TRANSITIONS
    decided = {a.approver_id for a in order.approvals.all()}
    tasks = sorted(order.tasks.all(), key=lambda t: (t.phase or 0, t.owner))
    holds = (
        list(active_legal_holds(order.tenant_id))
        if order.kind == GovernanceOrder.Kind.DELETION and order.status != "completed"
        else []
    )
    return {
        "phases": selectors.order_progress(order),
        "percent": selectors.order_percent_done(order),
        "poll_seconds": POLL_SECONDS.get(order.status),
        "tasks": tasks,
        "record_links": _record_links(order, tasks, holds),
        "entries": document["entries"],
        "verified": evidence.verify(document)[0],
        "final_digest": document["final_digest"],
        "starts_at": services.order_starts_at(order),
        "artifact": selectors.export_artifact_of(order),
        "holds": holds,
        "erasure_waits": selectors.erasure_waits(order),
        "may_decide": moves.allows(order.status, GovernanceOrder.Status.APPROVED)
        and order.requested_by_id != user.pk
        and user.pk not in decided,
        "may_cancel": moves.allows(order.status, GovernanceOrder.Status.CANCELLED),
        "may_retry": user.is_operator and order.in_progress,
    }


def _record_links(order: GovernanceOrder, tasks, holds) -> dict[str, str]:
    """The ids the order's evidence and receipts name, each to its page: a task to its
    row on this page, a binding to the binding page, a hold to the hold page."""
    links = {str(order.pk): order.get_absolute_url()}
    for task in tasks:
        links[str(task.pk)] = f"#task-{task.pk}"
        if binding := task.detail.get("binding"):
            links[str(binding)] = reverse("stores:binding-detail", args=[binding])
    for hold in holds:
        links[str(hold.pk)] = reverse("retention:hold-detail", args=[hold.pk])
    return links


@platform_scope  # as the order page itself (OrderDetailView.steward_scope)
@login_required
def order_body(request, pk):
    """The part of the order page that moves while the order runs (progress, tasks and
    receipts, evidence), which the page asks for every few seconds. Once the order's
    status is no longer the one the page shows, the whole page is reloaded instead:
    its status, alerts and downloads change with it."""
    _require_governor(request)
    order = get_object_or_404(selectors.order_list(), pk=pk)
    if reload := reload_when_moved(request.GET.get("status"), order.status):
        return reload
    return render(
        request, "governance/_order_body.html", {"order": order, **_order_context(request, order)}
    )


@login_required
def order_new(request):
    _require_governor(request)
    form = OrderForm(request.POST or None, initial={"tenant": request.tenant})
    form.fields["tenant"].queryset = tenants_visible_to(
        platform_wide=request.platform_wide, tenant=request.tenant
    ).order_by("slug")
    order = submit_form(
        request,
        form,
        lambda data: services.order_request(actor=request.actor, **data),
    )
    if order is not None:
        messages.success(request, "Order requested; it waits for approval.")
        return redirect(order)
    return render(request, "console/form.html", {"form": form, "title": "New governance order"})


@require_POST
@login_required
def order_act(request, pk, act):
    _require_governor(request)
    order = get_object_or_404(selectors.order_list(), pk=pk)
    comment = request.POST.get("comment", "")
    try:
        if act in ("approve", "reject"):
            services.order_decide(
                actor=request.actor, order=order, approve=act == "approve", comment=comment
            )
        elif act == "cancel":
            if confirmed(request, "cancelling the order"):
                services.order_cancel(actor=request.actor, order=order, reason=comment)
        else:
            raise PermissionDenied
    except DomainError as exc:
        messages.error(request, exc.detail)
    return HttpResponseRedirect(order.get_absolute_url())


@require_POST
@login_required
def owner_task_retry(request, pk):
    task = get_object_or_404(selectors.owner_task_list(), pk=pk)
    try:
        services.owner_task_retry(actor=request.actor, task_id=task.pk)
    except DomainError as exc:
        messages.error(request, exc.detail)
    return HttpResponseRedirect(task.order.get_absolute_url() if task.order_id else "/")


owner_task_retry.steward_scope = "system"
