from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.generic import DetailView

from apps.assets import selectors, services
from apps.assets.filters import AssetFilterSet
from apps.assets.forms import AssetForm
from apps.console.listing import Column, ListPage
from apps.console.manage_views import submit_form
from apps.console.progress import Progress, reload_when_moved
from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, TENANT_MEMBER, caller_kind
from apps.core.errors import DomainError
from apps.tenancy import selectors as tenancy_selectors


class AssetListView(ListPage):
    title = "Assets"
    filterset_class = AssetFilterSet
    search_fields = ("name", "description")
    search_name, search_name_folded = "name", "name_folded"
    default_ordering = "-created_at"
    create = ("New asset", "assets:asset-new", {OPERATOR, TENANT_ADMIN, TENANT_MEMBER})
    columns = (
        Column("Name", "name", sort="name", link=True),
        Column("Tenant", "tenant.slug", sort="tenant__slug"),
        Column("Status", "get_status_display", sort="status"),
        Column("Waiting on the Workflow Service", "is_workflow_managed"),
        Column("Workflow instance", "workflow_instance_id"),
        Column("Created", "created_at", sort="created_at"),
    )
    # Read as `.values()` (apps.console.rows): what the cells, the link and
    # `is_workflow_managed` read.
    row_fields = (
        "pk", "name", "tenant__slug", "status", "workflow_instance_id",
        "workflow_link_stale", "created_at",
    )  # fmt: skip

    def get_base_queryset(self):
        # The request's scope is this tenant's whenever it has one (TenantScopeMiddleware).
        return selectors.asset_list(tenant=self.request.tenant)


@login_required
def asset_new(request):
    # As in the API: members create in the tenant they act for.
    if caller_kind(request) not in AssetListView.create[2]:
        raise PermissionDenied
    form = AssetForm(request.POST or None)
    # In the all-tenants view no tenant is named to create in: the page says so, on the
    # form once it is sent (an unbound form takes no errors).
    notice = ""
    if request.tenant is None:
        notice = "Choose the tenant to act for before creating assets."
    if notice and form.is_bound:
        form.add_error(None, notice)
    asset = submit_form(
        request,
        form,
        lambda data: services.asset_create(actor=request.actor, tenant=request.tenant, **data),
    )
    if asset is not None:
        messages.success(request, f"Asset {asset.name} created.")
        return redirect(asset)
    context = {
        "form": form,
        "title": "New asset",
        "notice": "" if form.is_bound else notice,
        "choose_tenant": bool(notice),
    }
    return render(request, "console/form.html", context)


class AssetDetailView(LoginRequiredMixin, DetailView):
    template_name = "assets/asset_detail.html"
    context_object_name = "asset"

    def get_queryset(self):
        return selectors.asset_list()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        asset = self.object
        context["history"] = tenancy_selectors.audit_event_list().filter(
            object_type="assets.asset", object_id=str(asset.pk)
        )[:50]
        context["callbacks"] = selectors.callbacks_of(asset)[:50]
        context["may_decide"] = (
            asset.status == asset.Status.REQUESTED
            and not asset.is_workflow_managed
            and selectors.may_decide(
                self.request.user, asset, caller_kind=caller_kind(self.request)
            )
        )
        context["may_request"] = selectors.may_request_approval(asset)
        may_decide_any = selectors.may_decide(
            self.request.user, asset, caller_kind=caller_kind(self.request)
        )
        context["may_edit"] = asset.status not in asset.FROZEN
        context["may_delete"] = asset.status in asset.DELETABLE
        context["may_retire"] = (
            asset.TRANSITIONS.allows(asset.status, asset.Status.RETIRED) and may_decide_any
        )
        context["delegation_failed"] = asset.status == asset.Status.REQUESTED and bool(
            asset.delegation_failure
        )
        context["may_resolve_delegation"] = context["delegation_failed"] and may_decide_any
        context["progress"] = _delegation_progress(asset, self.request, context["history"])
        # Not decided by hand while the delegation the page follows is on its way.
        context["may_decide"] = context["may_decide"] and context["progress"] is None
        return context


# The page follows a delegation it sent (`?delegating=1`), while the asset's latest
# request was delegated and has neither an instance nor a failure yet: the row alone
# cannot tell a request waiting on the worker from one left to a person (both without an
# instance); whether it was delegated is written on its audit entry.
DELEGATING = "delegating"
SENDS = ("asset.request_approval", "asset.delegation_retry", "asset.delegation_rerequest")


def _delegation_state(asset, history) -> str:
    if not services.delegation_pending(asset):
        return "done"
    latest = next((e for e in history if e.action in SENDS), None)
    if latest is None:
        return "done"
    sent = (
        latest.action != "asset.request_approval"
        or (latest.changes or {}).get("delegated", [None, False])[-1]
    )
    return DELEGATING if sent else "done"


def _delegation_progress(asset, request, history) -> Progress | None:
    """A delegation sent from this page, until the worker has the Workflow Service's
    instance (or its refusal): apps.console.progress, as a replay or a sweep."""
    if request.GET.get(DELEGATING) != "1" or _delegation_state(asset, history) != DELEGATING:
        return None
    return Progress(
        state=DELEGATING,
        said="Delegation sent: a worker asks the Workflow Service to start the approval.",
        url=reverse("assets:delegation-progress", args=[asset.pk]),
        query=((DELEGATING, "1"),),
    )


def delegation_progress(request, pk):
    """The asset page's progress part while its delegation waits on a worker."""
    _signed_in(request)
    asset = get_object_or_404(selectors.asset_list(), pk=pk)
    history = tenancy_selectors.audit_event_list().filter(
        object_type="assets.asset", object_id=str(asset.pk), action__in=SENDS
    )[:1]
    state = _delegation_state(asset, history)
    if reload := reload_when_moved(request.GET.get("state"), state):
        return reload
    return render(
        request,
        "console/_progress.html",
        {"progress": _delegation_progress(asset, request, history)},
    )


def _act_on_asset(request, pk, act, *, follow: bool = False):
    """`act` on the asset, then back to its page; `follow`: the act sent work to a
    worker, which the page follows until it is done."""
    asset = get_object_or_404(selectors.asset_list(), pk=pk)
    try:
        act(asset)
    except DomainError as exc:
        messages.error(request, exc.detail)
        follow = False
    url = asset.get_absolute_url()
    return HttpResponseRedirect(f"{url}?{DELEGATING}=1" if follow else url)


@require_POST
def asset_request_approval(request, pk):
    if not request.user.is_authenticated:
        raise PermissionDenied
    delegate = request.POST.get("delegate") == "on"
    return _act_on_asset(
        request,
        pk,
        lambda asset: services.asset_request_approval(
            actor=request.actor, asset=asset, delegate=delegate
        ),
        follow=delegate,
    )


@require_POST
def asset_decide(request, pk, verdict):
    if not request.user.is_authenticated:
        raise PermissionDenied
    asset = get_object_or_404(selectors.asset_list(), pk=pk)
    if not selectors.may_decide(request.user, asset, caller_kind=caller_kind(request)):
        raise PermissionDenied
    return _act_on_asset(
        request,
        pk,
        lambda asset: services.asset_decide(
            actor=request.actor,
            asset=asset,
            approve=verdict == "approve",
            reason=request.POST.get("reason", ""),
        ),
    )


def _signed_in(request):
    if not request.user.is_authenticated:
        raise PermissionDenied


def _may_decide_or_403(request, pk):
    asset = get_object_or_404(selectors.asset_list(), pk=pk)
    if not selectors.may_decide(request.user, asset, caller_kind=caller_kind(request)):
        raise PermissionDenied


@login_required
def asset_edit(request, pk):
    asset = get_object_or_404(selectors.asset_list(), pk=pk)
    if caller_kind(request) not in AssetListView.create[2]:
        raise PermissionDenied
    form = AssetForm(
        request.POST or None, initial={"name": asset.name, "description": asset.description}
    )
    saved = submit_form(
        request,
        form,
        lambda data: services.asset_update(actor=request.actor, asset=asset, **data),
    )
    if saved is not None:
        messages.success(request, f"Asset {saved.name} saved.")
        return redirect(saved)
    return render(request, "console/form.html", {"form": form, "title": f"Edit {asset.name}"})


@require_POST
def asset_delete(request, pk):
    _signed_in(request)
    if caller_kind(request) not in AssetListView.create[2]:
        raise PermissionDenied
    asset = get_object_or_404(selectors.asset_list(), pk=pk)
    try:
        services.asset_delete(actor=request.actor, asset=asset)
    except DomainError as exc:
        messages.error(request, exc.detail)
        return HttpResponseRedirect(asset.get_absolute_url())
    messages.success(request, f"Asset {asset.name} deleted.")
    return redirect("assets:asset-list")


@require_POST
def asset_retire(request, pk):
    _signed_in(request)
    _may_decide_or_403(request, pk)
    reason = request.POST.get("reason", "")
    return _act_on_asset(
        request,
        pk,
        lambda asset: services.asset_retire(actor=request.actor, asset=asset, reason=reason),
    )


@require_POST
def delegation_retry(request, pk):
    _signed_in(request)
    _may_decide_or_403(request, pk)
    return _act_on_asset(
        request,
        pk,
        lambda asset: services.delegation_retry(asset=asset, actor=request.actor),
        follow=True,
    )


@require_POST
def delegation_decide(request, pk):
    _signed_in(request)
    _may_decide_or_403(request, pk)
    decision, reason = request.POST.get("decision", ""), request.POST.get("reason", "")
    return _act_on_asset(
        request,
        pk,
        lambda asset: services.delegation_decide(
            asset=asset, actor=request.actor, decision=decision, reason=reason
        ),
    )
