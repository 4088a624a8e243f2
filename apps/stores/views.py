"""The stores console: bindings by tenant, residency rules with a preview, a what-if
evaluator and the profiles' certification records."""

from __future__ import annotations

from datetime import UTC

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.mixins import LoginRequiredMixin
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponseRedirect
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from django.views.decorators.http import require_POST
from django.views.generic import DetailView

from apps.console.confirm import confirmed
from apps.console.listing import Column, ListPage
from apps.console.manage_views import submit_form
from apps.core.api.permissions import OPERATOR, PLATFORM_SERVICE, TENANT_ADMIN, caller_kind
from apps.core.errors import DomainError
from apps.core.view_scope import platform_scope
from apps.stores import selectors, services
from apps.stores.filters import (
    BenchmarkResultFilterSet,
    ContractTestResultFilterSet,
    MigrationPilotFilterSet,
    PhysicalizationPolicyFilterSet,
    ProfileCertificationFilterSet,
    ResidencyRuleFilterSet,
    StoreBindingFilterSet,
)
from apps.stores.forms import (
    BenchmarkForm,
    ContractTestForm,
    PilotForm,
    PolicyForm,
    RuleForm,
    WhatIfForm,
)
from apps.tenancy.selectors import tenants_visible_to

RELATED = (
    ("Bindings", "stores:binding-list"),
    ("Residency rules", "stores:rule-list"),
    ("What if…", "stores:what-if"),
    ("Profile certifications", "stores:certification-list"),
    ("Benchmarks", "stores:benchmark-list"),
    ("Contract tests", "stores:contract-test-list"),
    ("Physicalization policies", "stores:policy-list"),
    ("Migration pilots", "stores:pilot-list"),
)
MANAGERS = (OPERATOR, TENANT_ADMIN, PLATFORM_SERVICE)


class BindingListView(ListPage):
    title = "Store bindings"
    filterset_class = StoreBindingFilterSet
    search_fields = ("store__slug", "tenant__slug", "status_reason")
    default_ordering = "-created_at"
    related_pages = RELATED
    columns = (
        Column("Store", "store.slug", sort="store__slug", link=True),
        Column("Tenant", "tenant.slug", sort="tenant__slug"),
        Column("Profile", "profile.slug", shows="wide"),
        Column("Region", "region.slug", sort="region__slug", shows="wide"),
        Column("Status", "get_status_display", sort="status"),
        Column("Residency violation", "violation"),
        Column("Workload violation", "workload_violation"),
        Column("Created", "created_at", sort="created_at"),
    )

    def get_base_queryset(self):
        return selectors.binding_list()


class BindingDetailView(LoginRequiredMixin, DetailView):
    template_name = "stores/binding_detail.html"
    context_object_name = "binding"

    def get_queryset(self):
        return selectors.binding_list()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["may_manage"] = caller_kind(self.request) in MANAGERS
        context["may_report"] = caller_kind(self.request) in (OPERATOR, PLATFORM_SERVICE)
        context["may_decide"] = caller_kind(self.request) == OPERATOR
        context["exception_in_force"] = self.object.exception_in_force()
        context["checklist"] = selectors.migration_checklist(self.object.store, self.object.profile)
        context["related_pages"] = RELATED
        return context


@require_POST
@login_required
def binding_act(request, pk, act):
    # Retiring is for managers; reporting migrations applied is provisioning's (operators
    # stand in for it).
    # granting a residency exception is an operator's decision alone.
    allowed = {
        "migrations-applied": (OPERATOR, PLATFORM_SERVICE),
        "grant-exception": (OPERATOR,),
    }.get(act, MANAGERS)
    if caller_kind(request) not in allowed:
        raise PermissionDenied
    binding = get_object_or_404(selectors.binding_list(), pk=pk)
    try:
        if act == "migrations-applied":
            services.binding_migrations_applied(actor=request.actor, binding=binding)
        elif act == "grant-exception":
            services.binding_grant_exception(
                actor=request.actor,
                binding=binding,
                reason=request.POST.get("reason", ""),
                expires_at=_moment(request.POST.get("expires_at", "")),
            )
            messages.success(request, "Exception granted; it ends by itself at its expiry.")
        elif act == "retire":
            if confirmed(request, "retiring the binding"):
                services.binding_retire(
                    actor=request.actor, binding=binding, reason=request.POST.get("reason", "")
                )
        else:
            raise PermissionDenied
    except DomainError as exc:
        messages.error(request, exc.detail)
    return HttpResponseRedirect(binding.get_absolute_url())


def _moment(value: str):
    """A console datetime field (the browser's local form, read as UTC), or None."""
    moment = parse_datetime(value.strip()) if value else None
    if moment is not None and timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    return moment


class RuleListView(ListPage):
    title = "Residency rules"
    filterset_class = ResidencyRuleFilterSet
    default_ordering = "id"
    related_pages = RELATED
    create = ("New rule", "stores:rule-new", {OPERATOR})
    columns = (
        Column("Rule", "pk", sort="id", link=True),
        Column("Tenant", "tenant.slug"),
        Column("Data class", "data_class.slug"),
        Column("Effect", "get_effect_display", sort="effect"),
        Column("Geographies", "geographies"),
        Column("Exception", "is_exception"),
        Column("Reason", "reason"),
    )

    def get_base_queryset(self):
        return selectors.rule_list()


@platform_scope
@login_required
def rule_edit(request, pk=None):
    """Create or change a rule. "Preview" lists the Provisioned and Active bindings the
    rule as entered would make non-compliant, and saves nothing."""
    if not request.user.is_operator:
        raise PermissionDenied
    rule = get_object_or_404(selectors.rule_list(), pk=pk) if pk else None
    initial = {}
    if rule is not None:
        initial = {
            "tenant": rule.tenant,
            "data_class": rule.data_class,
            "effect": rule.effect,
            "regions": list(rule.regions.all()),
            "geographies": ", ".join(rule.geographies),
            "is_exception": rule.is_exception,
            "reason": rule.reason,
        }
    form = RuleForm(request.POST or None, initial=initial)
    affected = None
    if request.method == "POST" and "preview" in request.POST:
        if form.is_valid():
            affected = selectors.rule_preview(replacing=rule, **form.cleaned_data)
    else:

        def save(data):
            if rule is None:
                return services.rule_create(actor=request.actor, **data)
            return services.rule_update(actor=request.actor, rule=rule, **data)

        if submit_form(request, form, save):
            messages.success(request, "Rule saved; bindings it no longer allows are flagged.")
            return redirect("stores:rule-list")
    return render(
        request,
        "stores/rule_form.html",
        {"form": form, "rule": rule, "affected": affected, "related_pages": RELATED},
    )


@platform_scope
@login_required
def what_if(request):
    form = WhatIfForm(request.GET or None)
    form.fields["tenant"].queryset = tenants_visible_to(
        platform_wide=request.platform_wide, tenant=request.tenant
    ).order_by("slug")
    verdict = None
    if request.GET and form.is_valid():
        data = form.cleaned_data
        verdict = selectors.what_if(**data)
    return render(
        request,
        "stores/what_if.html",
        {"form": form, "verdict": verdict, "related_pages": RELATED},
    )


class CertificationListView(ListPage):
    title = "Profile certifications"
    filterset_class = ProfileCertificationFilterSet
    default_ordering = "-certified_at"
    related_pages = RELATED
    columns = (
        Column("Profile", "profile.slug", sort="profile__slug"),
        Column("Engine", "profile.get_engine_display"),
        Column("Shape", "profile.get_shape_display"),
        Column("Workload", "get_workload_class_display", sort="workload_class"),
        Column("Certified by", "certified_by"),
        Column("When", "certified_at", sort="certified_at"),
        Column("Benchmark evidence", "benchmark_reference"),
        Column("Revoked", "revoked_at"),
    )

    def get_base_queryset(self):
        return selectors.certification_list()


# --------------------------------------------------------------------------- workload evidence

RECORDER = {OPERATOR}  # people; the benchmark and CI runs record through the API


class BenchmarkListView(ListPage):
    title = "Benchmark results"
    filterset_class = BenchmarkResultFilterSet
    default_ordering = "-recorded_at"
    related_pages = RELATED
    create = ("Record a benchmark", "stores:evidence-record-benchmark", RECORDER)
    columns = (
        Column("Query shape", "get_query_shape_display", sort="query_shape"),
        Column("Provider", "get_provider_display", sort="provider", shows="wide"),
        Column("Profile", "profile.slug"),
        Column("Figure", "figure"),
        Column("Threshold", "threshold", shows="wide"),
        Column("Unit", "unit", shows="wide"),
        Column("Passed", "passed", sort="passed"),
        Column("Run", "run_reference"),
        Column("Recorded by", "recorded_by", shows="wide"),
        Column("When", "recorded_at", sort="recorded_at"),
    )

    def get_base_queryset(self):
        return selectors.benchmark_list()


class ContractTestListView(ListPage):
    title = "Provider contract tests"
    filterset_class = ContractTestResultFilterSet
    default_ordering = "-recorded_at"
    related_pages = RELATED
    create = ("Record a contract test", "stores:evidence-record-contract-test", RECORDER)
    columns = (
        Column("Contract", "get_contract_display", sort="contract"),
        Column("Provider", "get_provider_display", sort="provider"),
        Column("Passed", "passed", sort="passed"),
        Column("Run", "run_reference"),
        Column("Recorded by", "recorded_by"),
        Column("When", "recorded_at", sort="recorded_at"),
    )

    def get_base_queryset(self):
        return selectors.contract_test_list()


class PolicyListView(ListPage):
    title = "Physicalization policies"
    filterset_class = PhysicalizationPolicyFilterSet
    default_ordering = "-recorded_at"
    related_pages = RELATED
    create = ("Record a policy", "stores:evidence-record-policy", RECORDER)
    columns = (
        Column("Profile", "profile.slug", sort="profile__slug"),
        Column("Workload", "get_workload_class_display", sort="workload_class"),
        Column("Kind", "get_kind_display", sort="kind"),
        Column("Rollback guidance", "rollback_guidance"),
        Column("Run", "run_reference"),
        Column("Recorded by", "recorded_by"),
        Column("When", "recorded_at", sort="recorded_at"),
    )

    def get_base_queryset(self):
        return selectors.policy_list()


class PilotListView(ListPage):
    title = "Migration pilots"
    filterset_class = MigrationPilotFilterSet
    default_ordering = "-recorded_at"
    related_pages = RELATED
    create = ("Record a pilot", "stores:evidence-record-pilot", RECORDER)
    columns = (
        Column("Store", "store.slug", sort="store__slug"),
        Column("Profile", "profile.slug", sort="profile__slug"),
        Column("Outcome", "get_outcome_display", sort="outcome"),
        Column("Started", "started_at", sort="started_at"),
        Column("Ended", "ended_at"),
        Column("Run", "run_reference"),
        Column("Recorded by", "recorded_by"),
        Column("When", "recorded_at", sort="recorded_at"),
    )

    def get_base_queryset(self):
        return selectors.pilot_list()


EVIDENCE_FORMS = {
    "benchmark": (BenchmarkForm, services.benchmark_record, "stores:benchmark-list"),
    "contract-test": (ContractTestForm, services.contract_test_record, "stores:contract-test-list"),
    "policy": (PolicyForm, services.policy_record, "stores:policy-list"),
    "pilot": (PilotForm, services.pilot_record, "stores:pilot-list"),
}


@platform_scope
@login_required
def record_evidence(request, kind):
    """Record one piece of workload evidence (operators; runs use the API)."""
    if kind not in EVIDENCE_FORMS:
        raise Http404
    if caller_kind(request) not in RECORDER:
        raise PermissionDenied
    form_class, record, listing = EVIDENCE_FORMS[kind]
    form = form_class(request.POST or None)
    if submit_form(request, form, lambda data: record(actor=request.actor, **data)):
        messages.success(request, "Evidence recorded; the bindings it concerns are re-evaluated.")
        return redirect(listing)
    title = {
        "benchmark": "Record a benchmark result",
        "contract-test": "Record a contract test",
        "policy": "Record a physicalization policy",
        "pilot": "Record a migration pilot",
    }[kind]
    return render(request, "console/form.html", {"form": form, "title": title})
