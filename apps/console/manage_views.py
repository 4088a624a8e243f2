"""Console pages that change things: each validates a form and calls one service."""

from __future__ import annotations

from datetime import timedelta

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from apps.console.confirm import confirmed
from apps.console.forms import (
    InvitationWithdrawForm,
    MembershipForm,
    ServiceAccountForm,
    TenantForm,
    TokenForm,
)
from apps.core.api.permissions import OPERATOR, TENANT_ADMIN, caller_kind
from apps.core.context import Actor
from apps.core.errors import DomainError
from apps.core.view_scope import platform_scope, unscoped
from apps.tenancy import selectors, services


def _refused(form, exc) -> None:
    """Show a service's refusal on the form: field errors by field, the rest on top."""
    if isinstance(exc, DjangoValidationError) and hasattr(exc, "error_dict"):
        for field, errors in exc.message_dict.items():
            form.add_error(field if field in form.fields else None, errors)
    else:
        field = getattr(exc, "extra", {}).get("field")
        form.add_error(
            field if field in form.fields else None, getattr(exc, "detail", None) or exc.messages
        )


def submit_form(request, form, call):
    """For a valid POSTed form, what `call(cleaned_data)` returns; None when there is no
    valid submission or the service refused it (its reasons then show on the form)."""
    if request.method != "POST" or not form.is_valid():
        return None
    try:
        return call(form.cleaned_data)
    except (DomainError, DjangoValidationError) as exc:
        _refused(form, exc)
        return None


def _require(request, *kinds: str) -> None:
    if caller_kind(request) not in kinds:
        raise PermissionDenied


def _visible_tenant(request, pk):
    tenants = selectors.tenants_visible_to(
        platform_wide=request.platform_wide, tenant=request.tenant
    )
    return get_object_or_404(tenants, pk=pk)


def _may_manage(request, tenant) -> bool:
    kind = caller_kind(request)
    return kind == OPERATOR or (kind == TENANT_ADMIN and request.tenant == tenant)


def _managed_tenant(request, pk):
    """The tenant `pk` names, if the caller manages its members; 404 or 403 otherwise."""
    tenant = _visible_tenant(request, pk)
    if not _may_manage(request, tenant):
        raise PermissionDenied
    return tenant


@platform_scope
@login_required
def tenant_create(request):
    _require(request, OPERATOR)
    form = TenantForm(request.POST or None)
    tenant = submit_form(
        request, form, lambda data: services.tenant_create(actor=request.actor, **data)
    )
    if tenant is not None:
        messages.success(request, f"Tenant {tenant.slug} created.")
        return redirect(tenant)
    return render(request, "console/form.html", {"form": form, "title": "New tenant"})


@login_required
def tenant_edit(request, pk):
    _require(request, OPERATOR)
    tenant = _visible_tenant(request, pk)
    initial = {
        "name": tenant.name,
        "home_region": tenant.home_region.slug,
        "environment_class": tenant.environment_class,
        "status": tenant.status,
    }
    form = TenantForm(request.POST or None, initial=initial, editing=True)
    saved = submit_form(
        request,
        form,
        lambda data: services.tenant_update(actor=request.actor, tenant=tenant, **data),
    )
    if saved is not None:
        messages.success(request, f"Tenant {tenant.slug} saved.")
        return redirect(tenant)
    return render(request, "console/form.html", {"form": form, "title": f"Edit {tenant.slug}"})


@login_required
@require_POST
def membership_add(request, pk):
    tenant = _managed_tenant(request, pk)
    form = MembershipForm(request.POST)
    if form.is_valid():
        # An invitation the person accepts, answered alike whoever the username names.
        username = form.cleaned_data["username"]
        services.membership_invite(
            actor=request.actor,
            tenant=tenant,
            username=username,
            role=form.cleaned_data["role"],
            by_operator=caller_kind(request) == OPERATOR,
        )
        messages.success(
            request, f"Invited {username}, if they may join: they become a member on accepting."
        )
    else:
        messages.error(request, "Give a username and a role.")
    return redirect(tenant)


@login_required
@require_POST
def membership_remove(request, pk, membership_pk):
    tenant = _managed_tenant(request, pk)
    # Members only: a pending invitation's id answers as a missing one or another
    # tenant's does (404), so an id names no one the admin cannot already see.
    # Invitations are withdrawn by the username the admin typed (invitation_withdraw).
    membership = get_object_or_404(selectors.membership_list(), pk=membership_pk, tenant=tenant)
    services.membership_remove(actor=request.actor, membership=membership)
    messages.success(request, f"{membership.user.username} removed from {tenant.slug}.")
    return redirect(tenant)


@login_required
@require_POST
def invitation_withdraw(request, pk):
    tenant = _managed_tenant(request, pk)
    form = InvitationWithdrawForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Name the username invited.")
        return redirect(tenant)
    username = form.cleaned_data["username"]
    services.membership_invitation_withdraw(actor=request.actor, tenant=tenant, username=username)
    messages.success(request, f"Invitation of {username} withdrawn, if it was waiting.")
    return redirect(tenant)


@login_required
def service_account_create(request):
    _require(request, OPERATOR, TENANT_ADMIN)
    form = ServiceAccountForm(request.POST or None)
    # A tenant admin's accounts belong to their tenant; an operator's to the tenant
    # they act for, or to the platform when they act for none.
    tenant = request.tenant
    account = submit_form(
        request,
        form,
        lambda data: services.service_account_create(actor=request.actor, tenant=tenant, **data),
    )
    if account is not None:
        messages.success(request, f"Service account {account.name} created.")
        return redirect("console:service-account-detail", pk=account.pk)
    title = f"New service account for {tenant.slug if tenant else 'the platform'}"
    # A refused name answers 400 like any refused form, whatever the reason.
    status = 400 if request.method == "POST" else 200
    context = {"form": form, "title": title}
    if tenant is None:
        context |= {
            "notice": "In the all-tenants view a new account is the platform's, and acts "
            "across tenants. To create one for a tenant, act for that tenant first.",
            "choose_tenant": True,
        }
    return render(request, "console/form.html", context, status=status)


def _account(request, pk):
    _require(request, OPERATOR, TENANT_ADMIN)
    return get_object_or_404(selectors.service_account_list(), pk=pk)


@login_required
def service_account_detail(request, pk):
    account = _account(request, pk)
    form = TokenForm(request.POST or None)
    issued = submit_form(
        request,
        form,
        lambda data: services.api_token_issue(actor=request.actor, service_account=account, **data),
    )
    if issued is not None:
        form = TokenForm()  # the secret shows once; the form starts afresh
    return _account_page(request, account, form=form, issued=issued)


def _account_page(request, account, *, form, issued):
    tokens = selectors.api_token_list().filter(service_account=account)
    now = timezone.now()
    context = {
        "account": account,
        "tokens": tokens,
        "form": form,
        "issued": issued,
        "overlaps": [(int(o.total_seconds()), _span(o)) for o in services.ROTATION_OVERLAPS],
        # A token that ends within a week is flagged: time to rotate it.
        "soon": now + timedelta(days=7),
        "now": now,
    }
    return render(request, "console/service_account_detail.html", context)


def _span(delta: timedelta) -> str:
    hours = int(delta.total_seconds() // 3600)
    return f"{hours} hours" if hours < 48 else f"{hours // 24} days"


@login_required
@require_POST
def token_rotate(request, pk, token_pk):
    """A new secret for a token, the old one still working for the overlap asked."""
    account = _account(request, pk)
    token = selectors.api_token_list().filter(service_account=account, pk=token_pk).first()
    if token is None:
        raise Http404
    try:
        overlap = timedelta(seconds=int(request.POST.get("overlap", "")))
    except ValueError:
        overlap = timedelta(seconds=-1)  # refused below, with its code
    try:
        issued = services.api_token_rotate(actor=request.actor, token=token, overlap=overlap)
    except DomainError as exc:
        messages.error(request, exc.detail)
        return redirect("console:service-account-detail", pk=account.pk)
    messages.success(
        request,
        f"Token {token.prefix}… rotated: it keeps working for {_span(overlap)}, then ends.",
    )
    return _account_page(request, account, form=TokenForm(), issued=issued)


@login_required
@require_POST
def token_revoke(request, pk, token_pk):
    account = _account(request, pk)
    token = selectors.api_token_list().filter(service_account=account, pk=token_pk).first()
    if token is None:
        raise Http404
    if confirmed(request, "revoking the token"):
        services.api_token_revoke(actor=request.actor, token=token)
        messages.success(request, f"Token {token.prefix}… revoked.")
    return redirect("console:service-account-detail", pk=account.pk)


# Outside the request scope: the invitations come from other tenants than the one the
# person acts for, which that scope would hide; the services open each tenant's scope.
@unscoped
@login_required
def invitations(request):
    """The invitations waiting on the person signed in; each accepted or declined here."""
    if request.method == "POST":
        invitation = selectors.invitation_of(request.user, _int(request.POST.get("invitation")))
        if invitation is None:
            raise Http404
        if request.POST.get("answer") == "accept":
            services.membership_accept(actor=Actor(user=request.user), membership=invitation)
            messages.success(
                request, f"You are now a member of {invitation.tenant.slug}; switch to act for it."
            )
        else:
            services.membership_decline(actor=Actor(user=request.user), membership=invitation)
            messages.success(request, f"Invitation to {invitation.tenant.slug} declined.")
        return redirect("console:invitations")
    pending = selectors.invitations_of(request.user)
    return render(request, "console/invitations.html", {"invitations": pending})


def _int(value) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0
