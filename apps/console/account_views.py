"""A person's own two-factor sign-in: enrol, confirm, recovery codes, disable; and the
operators' reset of someone else's authenticator.

The pages run outside any tenant scope (`unscoped`), as the login page does: what they
change belongs to a person, not a tenant, and is audited platform-wide, which a request
in a tenant's scope may not write.
"""

import segno
from django.contrib import messages
from django.contrib.auth import update_session_auth_hash
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from apps.console import twofactor
from apps.console.forms import CodeForm, UsernameForm
from apps.console.twofactor import two_factor_exempt
from apps.core.context import Actor
from apps.core.errors import DomainError
from apps.core.view_scope import unscoped
from apps.tenancy import selectors, services


def _actor(request) -> Actor:
    return Actor(user=request.user)


def _qr_code(uri: str) -> str:
    """The key URI as a QR code, an SVG data: URI for an <img>: drawn here, so the page
    needs no script and the policy's `img-src data:` admits it. Dark on white whatever
    the theme, as phone cameras expect."""
    return segno.make(uri, error="m").svg_data_uri(scale=4, dark="#000", light="#fff")


def _page(request, *, error=None, status=200, form=None):
    user = request.user
    device = selectors.totp_device_of(user)
    enabled = device is not None and device.confirmed_at is not None
    pending = selectors.totp_pending_enrolment(user)
    context = {
        "enabled": enabled,
        "pending": pending,
        "qr_code": _qr_code(pending.uri) if pending else None,
        "required": user.is_operator,
        "verified": twofactor.is_verified(request),
        "codes_left": selectors.recovery_codes_left(user) if enabled else None,
        "form": form or CodeForm(),
        "reset_form": UsernameForm() if user.is_operator else None,
        "error": error,
    }
    return render(request, "console/two_factor.html", context, status=status)


def _refused(request, exc: DomainError):
    """The page with a refused code's words; attempts exhausted (429, the sign-in code
    step's limit) also say when to come back."""
    return twofactor.with_retry_after(_page(request, error=exc.detail, status=exc.status), exc)


@two_factor_exempt
@unscoped
@login_required
def two_factor(request):
    return _page(request)


@two_factor_exempt
@unscoped
@login_required
@require_POST
def two_factor_start(request):
    try:
        services.totp_enrol_begin(actor=_actor(request), user=request.user)
    except DomainError as exc:
        return _page(request, error=exc.detail, status=exc.status)
    return redirect("console:two-factor")


@two_factor_exempt
@unscoped
@login_required
@require_POST
def two_factor_confirm(request):
    form = CodeForm(request.POST)
    if not form.is_valid():
        return _page(request, form=form, status=400)
    try:
        codes = services.totp_enrol_confirm(
            actor=_actor(request), user=request.user, code=form.cleaned_data["code"]
        )
    except DomainError as exc:
        return _page(request, error=exc.detail, status=exc.status)
    # Every other session of the person ended with the enrolment; this one goes on,
    # under the new session hash, and the code just given is its second factor.
    update_session_auth_hash(request, request.user)
    twofactor.mark_verified(request.session)
    return _recovery_codes(request, codes)


@unscoped
@login_required
@require_POST
def recovery_codes_regenerate(request):
    form = CodeForm(request.POST)
    if not form.is_valid():
        return _page(request, form=form, status=400)
    try:
        codes = services.recovery_codes_regenerate(
            actor=_actor(request), user=request.user, code=form.cleaned_data["code"]
        )
    except DomainError as exc:
        return _refused(request, exc)
    return _recovery_codes(request, codes)


def _recovery_codes(request, codes: list[str]):
    # Rendered, not redirected to: the codes exist nowhere else to show them from.
    response = render(request, "console/recovery_codes.html", {"codes": codes})
    response["Cache-Control"] = "no-store"
    return response


@unscoped
@login_required
@require_POST
def two_factor_disable(request):
    form = CodeForm(request.POST)
    if not form.is_valid():
        return _page(request, form=form, status=400)
    try:
        services.totp_disable(
            actor=_actor(request), user=request.user, code=form.cleaned_data["code"]
        )
    except DomainError as exc:
        return _refused(request, exc)
    messages.success(request, "Two-factor sign-in is off.")
    return redirect("console:two-factor")


@unscoped
@login_required
@require_POST
def two_factor_reset(request):
    """An operator removes another person's authenticator (a lost phone)."""
    if not request.user.is_operator:
        raise PermissionDenied
    form = UsernameForm(request.POST)
    if not form.is_valid():
        return _page(request, status=400)
    username = form.cleaned_data["username"]
    target = selectors.user_by_username(username)
    if target is None:
        return _page(request, error=f"There is no user {username!r}.", status=404)
    try:
        services.totp_reset(actor=_actor(request), user=target)
    except DomainError as exc:
        return _page(request, error=exc.detail, status=exc.status)
    messages.success(
        request,
        f"The authenticator of {username} is reset; they set up a new one at their next "
        "sign-in (operators must).",
    )
    return redirect("console:two-factor")
