"""Who has given their second factor in this session, and the rule for operators.

A session is *verified* when its person signed in with password and code, or enrolled
an authenticator in it. Operators must have a verified session to use anything but the
enrolment page and logout; that holds for the console, the Django admin, and the API
used with the session cookie. Calls with a service token are not affected.
"""

from __future__ import annotations

from django.contrib.auth import logout
from django.http import JsonResponse
from django.shortcuts import redirect

from apps.console.codes import ConsoleCode
from apps.core.api.exceptions import problem_response
from apps.tenancy import selectors

SESSION_KEY = "steward_two_factor"
# Between the password step and the code step of a login: whose code to ask for.
PENDING_LOGIN_SESSION_KEY = "steward_pending_login"
VERIFIED = "verified"
# Signed in with a password only, having no authenticator then.
PASSWORD_ONLY = "password"
API_PREFIX = "/api/"


def mark_verified(session) -> None:
    session[SESSION_KEY] = VERIFIED


def mark_password_only(session) -> None:
    session[SESSION_KEY] = PASSWORD_ONLY


def is_verified(request) -> bool:
    return request.session.get(SESSION_KEY) == VERIFIED


def with_retry_after(response, exc):
    """`response` with the Retry-After of a refusal that has one (attempts exhausted,
    apps.tenancy.attempts), for the sign-in and two-factor pages alike."""
    retry_after = getattr(exc, "retry_after", None)
    if retry_after:
        response["Retry-After"] = str(retry_after)
    return response


def two_factor_exempt(view):
    """Mark a view an operator without a verified session may still use: signing in and
    out, enrolment, probes."""
    view.steward_two_factor_exempt = True
    return view


def _exempt(view_func) -> bool:
    holders = (view_func, getattr(view_func, "cls", None), getattr(view_func, "view_class", None))
    return any(getattr(h, "steward_two_factor_exempt", False) for h in holders)


def _refuse_api(code: str, detail: str) -> JsonResponse:
    return problem_response(
        status_code=403, code=code, title="Two-factor sign-in required", detail=detail
    )


class TwoFactorMiddleware:
    """Hold operators to two-factor sign-in on every request, not only after login.

    Checked in process_view, once the view is known, so exempt views are declared on
    the view (`two_factor_exempt`) rather than listed as paths here.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view_func, view_args, view_kwargs):
        if _exempt(view_func):
            return None
        if getattr(request, "api_token", None) or getattr(request, "api_auth_error", None):
            return None  # a service token, answered by DRF; no session involved
        user = request.user
        if not user.is_authenticated:
            return None
        state = request.session.get(SESSION_KEY)
        if state == VERIFIED or (state == PASSWORD_ONLY and not user.is_operator):
            return None
        api = request.path.startswith(API_PREFIX)
        if selectors.has_second_factor(user):
            # An authenticator, but a session that never gave a code (the person enrolled
            # in another session since): sign in again.
            logout(request)
            if api:
                return _refuse_api(ConsoleCode.TWO_FACTOR_REQUIRED, "Sign in again with your code.")
            return redirect("console:login")
        if not user.is_operator:
            mark_password_only(request.session)  # spares the look-up on later requests
            return None
        if api:
            return _refuse_api(
                ConsoleCode.TWO_FACTOR_ENROLMENT_REQUIRED,
                "Operators must set up two-factor sign-in in the console first.",
            )
        return redirect("console:two-factor")
