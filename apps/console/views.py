import time
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, logout
from django.contrib.auth.decorators import login_required
from django.contrib.auth.mixins import LoginRequiredMixin, UserPassesTestMixin
from django.core.exceptions import PermissionDenied
from django.db.models import Count
from django.http import HttpResponseRedirect
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.generic import DetailView, TemplateView

from apps.console import twofactor
from apps.console.forms import CodeForm, LoginForm, MembershipForm
from apps.console.listing import Column, ListPage
from apps.console.panels import dashboard_panels
from apps.console.redirects import redirect_next
from apps.console.twofactor import PENDING_LOGIN_SESSION_KEY, two_factor_exempt
from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, caller_kind
from apps.core.errors import DomainError
from apps.core.schedules import schedule_health
from apps.core.search import search
from apps.core.view_scope import any_tenant_status, unscoped
from apps.tenancy import selectors, services
from apps.tenancy.codes import TenancyCode
from apps.tenancy.filters import AuditEventFilterSet, ServiceAccountFilterSet, TenantFilterSet
from apps.tenancy.middleware import ACTING_TENANT_SESSION_KEY
from apps.tenancy.models import Tenant


@two_factor_exempt
@unscoped
def login_view(request):
    form = LoginForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user = services.login_attempt(
                request=request,
                username=form.cleaned_data["username"],
                password=form.cleaned_data["password"],
            )
        except DomainError as exc:
            return _refused(request, "console/login.html", form, exc)
        else:
            if selectors.has_second_factor(user):
                # Not signed in yet: the session only remembers whose code to ask for.
                request.session[PENDING_LOGIN_SESSION_KEY] = {
                    "user": user.pk,
                    "backend": user.backend,
                    "at": time.time(),
                }
                # A session id planted before the password must not carry the code step.
                request.session.cycle_key()
                return _with_next(request, "console:login-code")
            login(request, user)
            twofactor.mark_password_only(request.session)
            if user.is_operator:
                return _with_next(request, "console:two-factor")
            return redirect_next(request)
    return render(request, "console/login.html", {"form": form})


def _refused(request, template: str, form, exc: DomainError):
    """The sign-in page again, with the refusal's words, its status (401, or 429 with
    Retry-After when attempts are exhausted)."""
    response = render(request, template, {"form": form, "error": exc.detail}, status=exc.status)
    return twofactor.with_retry_after(response, exc)


def _with_next(request, name: str) -> HttpResponseRedirect:
    target = request.POST.get("next") or request.GET.get("next", "")
    url = reverse(name)
    return HttpResponseRedirect(f"{url}?{urlencode({'next': target})}" if target else url)


@two_factor_exempt
@unscoped
def login_code_view(request):
    """The second step of a two-step login: the authenticator's code or a recovery code."""
    pending = request.session.get(PENDING_LOGIN_SESSION_KEY)
    if not pending or time.time() - pending["at"] > settings.STEWARD_LOGIN_CODE_SECONDS:
        request.session.pop(PENDING_LOGIN_SESSION_KEY, None)
        return redirect("console:login")
    form = CodeForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            user, method = services.login_second_factor(
                user_id=pending["user"], code=form.cleaned_data["code"]
            )
        except DomainError as exc:
            if exc.code in {TenancyCode.ACCOUNT_LOCKED, TenancyCode.LOGIN_EXPIRED}:
                # The password step starts again once the lock ends.
                request.session.pop(PENDING_LOGIN_SESSION_KEY, None)
            return _refused(request, "console/login_code.html", form, exc)
        else:
            request.session.pop(PENDING_LOGIN_SESSION_KEY, None)
            login(request, user, backend=pending["backend"])
            twofactor.mark_verified(request.session)
            if method == "recovery_code":
                left = selectors.recovery_codes_left(user)
                messages.warning(
                    request,
                    f"You signed in with a recovery code; {left} left. "
                    "Make new ones on the two-factor page if you are running out.",
                )
            return redirect_next(request)
    return render(request, "console/login_code.html", {"form": form})


@two_factor_exempt
@any_tenant_status
@require_POST
def logout_view(request):
    logout(request)
    return redirect("console:login")


@any_tenant_status
@require_POST
def switch_tenant(request):
    """Choose the tenant to act for; operators may choose none, to see every tenant."""
    if not request.user.is_authenticated:
        return redirect("console:login")
    wanted = request.POST.get("tenant", "")
    if not wanted:
        if not request.user.is_operator:
            raise PermissionDenied
        request.session.pop(ACTING_TENANT_SESSION_KEY, None)
    else:
        allowed = request.user.is_operator or any(
            # resolved by TenantScopeMiddleware before the request entered its scope
            str(m.tenant_id) == wanted
            for m in getattr(request, "available_memberships", [])
        )
        if not allowed or selectors.tenant_by_id(wanted) is None:
            raise PermissionDenied
        request.session[ACTING_TENANT_SESSION_KEY] = wanted
        services.person_choose_tenant(user=request.user, tenant_id=wanted)
    return redirect_next(request)


@any_tenant_status
@require_POST
def set_theme(request):
    theme = request.POST.get("theme", "auto")
    response = redirect_next(request)
    if theme in {"light", "dark", "auto"}:
        # Read by the server only; Secure whenever the console is served over HTTPS.
        response.set_cookie(
            "steward_theme",
            theme,
            max_age=365 * 86400,
            samesite="Lax",
            secure=request.is_secure(),
            httponly=True,
        )
    return response


class DashboardView(LoginRequiredMixin, TemplateView):
    template_name = "console/dashboard.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        request = self.request
        tenants = selectors.tenants_visible_to(
            platform_wide=request.platform_wide, tenant=request.tenant
        )
        context["tenant_counts"] = dict(
            tenants.order_by().values_list("status").annotate(n=Count("id"))
        )
        context["tenant_total"] = sum(context["tenant_counts"].values())
        # The audit trail is for operators and tenant admins, as in the API.
        may_audit = caller_kind(request) in (OPERATOR, TENANT_ADMIN)
        context["recent_audit"] = selectors.audit_event_list()[:10] if may_audit else None
        if request.user.is_operator:
            context["schedules"] = schedule_health()
        context["dashboard_panels"] = dashboard_panels(request)
        return context


class TenantListView(ListPage):
    title = "Tenants"
    create = ("New tenant", "console:tenant-create", {OPERATOR})
    filterset_class = TenantFilterSet
    search_fields = ("slug", "name")
    search_name = "slug"
    default_ordering = "slug"
    columns = (
        Column("Slug", "slug", sort="slug", link=True),
        Column("Name", "name", sort="name"),
        Column("Environment", "get_environment_class_display", sort="environment_class"),
        Column("Home region", "home_region.slug", sort="home_region__slug"),
        Column("Status", "get_status_display", sort="status"),
        Column("Members", "member_count", sort="member_count"),
        Column("Created", "created_at", sort="created_at"),
    )

    def get_base_queryset(self):
        return selectors.tenant_list(
            platform_wide=self.request.platform_wide, tenant=self.request.tenant
        )


class TenantDetailView(LoginRequiredMixin, DetailView):
    template_name = "console/tenant_detail.html"
    context_object_name = "tenant"

    def get_queryset(self):
        return selectors.tenants_visible_to(
            platform_wide=self.request.platform_wide, tenant=self.request.tenant
        )

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        tenant: Tenant = self.object
        kind = caller_kind(self.request)
        context["memberships"] = selectors.membership_list().filter(tenant=tenant)
        context["audit"] = (
            selectors.audit_event_list().filter(tenant=tenant)[:20]
            if kind in (OPERATOR, TENANT_ADMIN)
            else None
        )
        context["can_edit"] = kind == OPERATOR
        context["can_manage"] = kind == OPERATOR or (
            kind == TENANT_ADMIN and self.request.tenant == tenant
        )
        context["membership_form"] = MembershipForm()
        # Apart from the members: what the tenant's admins sent, as they typed it.
        context["invitations"] = selectors.invitations_sent(tenant) if context["can_manage"] else []
        return context


class OperatorOrTenantAdminMixin(UserPassesTestMixin):
    def test_func(self):
        return caller_kind(self.request) in (OPERATOR, TENANT_ADMIN)


class AuditListView(OperatorOrTenantAdminMixin, ListPage):
    title = "Audit trail"
    empty = "No audit entries yet."
    filterset_class = AuditEventFilterSet
    search_fields = ("object_repr", "actor_label", "action")
    default_ordering = "-occurred_at"
    template_name = "console/audit_list.html"
    row_cell_template = "console/_audit_cell.html"
    # Its names break anywhere and its codes between their words, so the Changes column
    # stays on screen at 1280 px (static/console/steward.css, table.audit).
    extra_context = {"table_class": "audit"}
    columns = (
        Column("When", "occurred_at", sort="occurred_at"),
        Column("Tenant", "tenant.slug", sort="tenant__slug", shows="wide"),
        Column("Actor", "actor_label", sort="actor_label"),
        Column("Action", "action", sort="action", code=True),
        Column("Object", "object_repr"),
        Column("Type", "object_type", sort="object_type", shows="wide", code=True),
        Column("Request", "request_id", shows="wide"),
    )

    def get_base_queryset(self):
        return selectors.audit_event_list()


class ServiceAccountListView(OperatorOrTenantAdminMixin, ListPage):
    title = "Service accounts"
    create = ("New service account", "console:service-account-create", {OPERATOR, TENANT_ADMIN})
    filterset_class = ServiceAccountFilterSet
    search_fields = ("name", "description")
    search_name = "name"
    default_ordering = "name"
    columns = (
        Column("Name", "name", sort="name", link=True),
        Column("Tenant", "tenant.slug", sort="tenant__slug"),
        Column("Active", "is_active", sort="is_active"),
        Column("Tokens", "token_count", sort="token_count"),
        Column("Created", "created_at", sort="created_at"),
    )

    def get_base_queryset(self):
        return selectors.service_account_list()


@login_required
def search_view(request):
    """The header's search box: one match opens its page, otherwise the matches by kind.
    Every app's lookups run in the request's scope (apps.core.search), so another
    tenant's object is answered as one that does not exist."""
    query, matches = search(request.GET.get("q"), request)
    if len(matches) == 1 and matches[0].url:
        return HttpResponseRedirect(matches[0].url)
    by_kind: dict[str, list] = {}
    for match in matches:
        by_kind.setdefault(match.kind, []).append(match)
    return render(
        request,
        "console/search.html",
        {"q": request.GET.get("q", "").strip(), "by_kind": by_kind, "count": len(matches)},
    )
