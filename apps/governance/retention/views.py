"""The retention console: rules and legal holds editors, the preview of tonight's
sweep, and the upcoming sweeps with the last ones' results."""

from __future__ import annotations

from datetime import datetime, timedelta
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_POST

from apps.console.listing import Column, ListPage
from apps.console.manage_views import submit_form
from apps.console.progress import Progress, reload_when_moved
from apps.core.api.permissions import OPERATOR, PLATFORM_SERVICE, TENANT_ADMIN, caller_kind
from apps.core.errors import DomainError
from apps.core.view_scope import platform_scope
from apps.governance import charts
from apps.governance.retention import selectors, services
from apps.governance.retention.filters import LegalHoldFilterSet, RetentionRuleFilterSet
from apps.governance.retention.forms import HoldForm, ReleaseForm, RuleForm
from apps.tenancy.selectors import tenants_visible_to

RELATED = (
    ("Sweeps", "retention:overview"),
    ("Rules", "retention:rule-list"),
    ("Legal holds", "retention:hold-list"),
    ("Tonight's preview", "retention:preview"),
)
GOVERNORS = (OPERATOR, TENANT_ADMIN)
UPCOMING = 7


def _require(request, *kinds) -> None:
    if caller_kind(request) not in kinds:
        raise PermissionDenied


# --------------------------------------------------------------------------- sweeps


@platform_scope
@login_required
def overview(request):
    """The schedule, the next sweeps, and what the last ones did."""
    _require(request, OPERATOR, PLATFORM_SERVICE)
    schedule = selectors.sweep_schedule()
    upcoming, moment = [], timezone.now()
    for _ in range(UPCOMING):
        moment = selectors.next_sweep_at(moment, schedule["crontab"])
        upcoming.append(moment)
        moment += timedelta(minutes=1)
    sweeps = list(selectors.sweep_list()[:14])
    outcomes = selectors.purge_outcomes([sweep.night for sweep in sweeps])
    for sweep in sweeps:
        sweep.outcomes = sorted(outcomes.get(sweep.night.isoformat(), {}).items())
    return render(
        request,
        "governance/retention_overview.html",
        {
            "schedule": schedule,
            "upcoming": upcoming,
            "sweeps": sweeps,
            "last_sweep_chart": charts.last_sweep_rows(sweeps[0] if sweeps else None),
            "related_pages": RELATED,
            "may_run": caller_kind(request) == OPERATOR,
            "progress": _sweep_progress(_asked(request)),
        },
    )


def _asked(request) -> datetime | None:
    """When the sweep this page follows was asked for (`asked`, set by `sweep_now`)."""
    try:
        asked = parse_datetime(request.GET.get("asked", ""))
    except ValueError:
        return None
    return asked if asked is not None and asked.tzinfo is not None else None


SWEEP_SAID = {
    "queued": "Sweep asked for: waiting for a worker to start it.",
    "running": "The sweep runs: purge tasks are issued and Steward's own tables swept.",
}


def _sweep_progress(asked: datetime | None) -> Progress | None:
    state = selectors.sweep_run_state(asked) if asked else "done"
    if state == "done":
        return None
    return Progress(
        state=state,
        said=SWEEP_SAID[state],
        url=reverse("retention:sweep-progress"),
        query=(("asked", asked.isoformat()),),
    )


@platform_scope
@login_required
@require_POST
def sweep_now(request):
    """Run tonight's sweep now; the overview follows it until it ends."""
    _require(request, OPERATOR)
    asked = services.sweep_request()
    messages.success(request, "Tonight's sweep is asked for; a worker runs it now.")
    return redirect(f"{reverse('retention:overview')}?{urlencode({'asked': asked.isoformat()})}")


@platform_scope
@login_required
def sweep_progress(request):
    """The overview's progress part while an asked-for sweep runs (apps.console.progress)."""
    _require(request, OPERATOR, PLATFORM_SERVICE)
    asked = _asked(request)
    state = selectors.sweep_run_state(asked) if asked else "done"
    if reload := reload_when_moved(request.GET.get("state"), state):
        return reload
    return render(request, "console/_progress.html", {"progress": _sweep_progress(asked)})


@platform_scope
@login_required
def preview(request):
    _require(request, OPERATOR, PLATFORM_SERVICE)
    preview = selectors.sweep_preview()
    return render(
        request,
        "governance/retention_preview.html",
        {
            "preview": preview,
            "tonight_chart": charts.preview_rows(preview),
            "related_pages": RELATED,
        },
    )


# --------------------------------------------------------------------------- rules


class RuleListView(ListPage):
    title = "Retention rules"
    filterset_class = RetentionRuleFilterSet
    search_fields = ("name",)
    search_name = "name"
    default_ordering = "name"
    related_pages = RELATED
    create = ("New rule", "retention:rule-new", {OPERATOR})
    columns = (
        Column("Rule", "name", sort="name", link=True),
        Column("Data class", "data_class.slug"),
        Column("Store", "store.slug"),
        Column("Keep (days)", "period_days", sort="period_days"),
        Column("Then", "get_action_display", sort="action"),
        Column("Locked", "locked", shows="wide"),
        Column("Enabled", "enabled"),
        Column("Changed", "updated_at", sort="updated_at"),
    )

    def get_base_queryset(self):
        return selectors.rule_list()


@platform_scope
@login_required
def rule_edit(request, pk=None):
    """Create or change a rule; a locked rule's refusals show on the form."""
    _require(request, OPERATOR)
    rule = get_object_or_404(selectors.rule_list(), pk=pk) if pk else None
    initial = {}
    if rule is not None:
        initial = {
            "name": rule.name,
            "data_class": rule.data_class,
            "store": rule.store,
            "period_days": rule.period_days,
            "action": rule.action,
            "enabled": rule.enabled,
            "locked": rule.locked,
        }
    form = RuleForm(request.POST or None, initial=initial or None)

    def save(data):
        if rule is None:
            return services.rule_create(actor=request.actor, **data)
        return services.rule_update(actor=request.actor, rule=rule, **data)

    if submit_form(request, form, save):
        messages.success(request, "Rule saved; tonight's sweep applies it.")
        return redirect("retention:rule-list")
    return render(
        request,
        "governance/retention_rule_form.html",
        {"form": form, "rule": rule, "related_pages": RELATED},
    )


@require_POST
@platform_scope
@login_required
def rule_delete(request, pk):
    _require(request, OPERATOR)
    rule = get_object_or_404(selectors.rule_list(), pk=pk)
    try:
        services.rule_delete(actor=request.actor, rule=rule)
    except DomainError as exc:
        messages.error(request, exc.detail)
        return redirect(rule)
    messages.success(request, f"Rule {rule.name} deleted.")
    return redirect("retention:rule-list")


# --------------------------------------------------------------------------- holds


class HoldListView(ListPage):
    """Operators see every tenant's holds, a tenant's admins their own (row-level
    security decides which rows the scope reads)."""

    steward_scope = "system"
    title = "Legal holds"
    filterset_class = LegalHoldFilterSet
    search_fields = ("reason", "tenant__slug")
    default_ordering = "-created_at"
    related_pages = RELATED
    create = ("Place a hold", "retention:hold-new", set(GOVERNORS))
    columns = (
        Column("Tenant", "tenant.slug", sort="tenant__slug", link=True),
        Column("Scope", "scope_label"),
        Column("Reason", "reason"),
        Column("By", "created_by.username"),
        Column("Since", "created_at", sort="created_at"),
        Column("Released", "released_at", sort="released_at"),
    )

    def dispatch(self, request, *args, **kwargs):
        if request.user.is_authenticated and caller_kind(request) not in GOVERNORS:
            raise PermissionDenied
        return super().dispatch(request, *args, **kwargs)

    def get_base_queryset(self):
        return selectors.hold_list()


def _governable_tenants(request):
    return tenants_visible_to(platform_wide=request.platform_wide, tenant=request.tenant)


@platform_scope
@login_required
def hold_new(request):
    _require(request, *GOVERNORS)
    form = HoldForm(request.POST or None, initial={"tenant": request.tenant})
    form.fields["tenant"].queryset = _governable_tenants(request).order_by("slug")
    hold = submit_form(request, form, lambda data: services.hold_place(actor=request.actor, **data))
    if hold is not None:
        messages.success(request, "Hold placed: nothing it covers is purged until it is released.")
        return redirect(hold)
    return render(
        request,
        "console/form.html",
        {"form": form, "title": "Place a legal hold", "related_pages": RELATED},
    )


@platform_scope
@login_required
def hold_detail(request, pk):
    _require(request, *GOVERNORS)
    hold = get_object_or_404(selectors.hold_list(), pk=pk)
    form = ReleaseForm(request.POST or None)
    if hold.active and submit_form(
        request,
        form,
        lambda data: services.hold_release(actor=request.actor, hold=hold, reason=data["reason"]),
    ):
        messages.success(request, "Hold released.")
        return redirect(hold)
    return render(
        request,
        "governance/legal_hold_detail.html",
        {
            "hold": hold,
            "form": form,
            "paused": selectors.purges_paused_by(hold) if hold.active else [],
            "related_pages": RELATED,
        },
    )
