"""Who is calling, and which tenant scope their request runs in."""

from __future__ import annotations

import base64
import binascii
import functools

from django.db import transaction
from django.urls import Resolver404, resolve

from apps.core.context import Actor
from apps.core.middleware import bad_input_response
from apps.core.scope import system_scope, tenant_scope
from apps.core.view_scope import NO_SCOPE, SYSTEM_SCOPE
from apps.tenancy import auth_cache, selectors
from apps.tenancy.codes import TenancyCode
from apps.tenancy.services import AuthenticationError, api_token_authenticate

ACTING_TENANT_SESSION_KEY = "steward_acting_tenant"  # the person's own choice
SESSION_TENANT_SESSION_KEY = "steward_session_tenant"  # the one the session started in
STATIC_PREFIX = "/static/"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def _view_scope(request) -> str | None:
    if request.path.startswith(STATIC_PREFIX):
        return NO_SCOPE
    return _declared_scope(request.path_info)


# Django resolves the URL again after the middleware; remembering the answer per path
# spares every request a second walk of the URL patterns. URLs are fixed at start-up.
@functools.lru_cache(maxsize=4096)
def _declared_scope(path_info: str) -> str | None:
    try:
        func = resolve(path_info).func
    except Resolver404:
        return None
    # A function view, a DRF view (func.cls) or a Django class-based view (func.view_class).
    for holder in (func, getattr(func, "cls", None), getattr(func, "view_class", None)):
        declared = getattr(holder, "steward_scope", None)
        if declared:
            return declared
    return None


@functools.lru_cache(maxsize=4096)
def _marked(path_info: str, marker: str) -> bool:
    """Whether the view of `path_info` carries `marker` (apps.core.view_scope)."""
    try:
        func = resolve(path_info).func
    except Resolver404:
        return False
    holders = (func, getattr(func, "cls", None), getattr(func, "view_class", None))
    return any(getattr(holder, marker, False) for holder in holders)


def tenant_status_refusal(request):
    """The answer refusing this request because of its tenant's status, or None.

    The one check of what a tenant's status means, for the API and the console alike:
    a deleted tenant's people and services cannot act at all; a suspended or
    offboarding tenant's cannot write, save governance's own work (views marked
    `governance_work`: answering owner tasks, checking evidence); new governance orders
    and legal holds are writes like any other. Platform callers (operators, platform
    services) act as Steward and are not refused here; governance's services decide
    what an operator may still start for such a tenant."""
    tenant = request.tenant
    if tenant is None or request.platform_wide:
        return None
    status = tenant.status
    if status == "active" or _marked(request.path_info, "steward_any_tenant_status"):
        return None
    if status == "deleted":
        code, detail = TenancyCode.TENANT_DELETED, "The tenant is deleted: it can no longer act."
    elif request.method in SAFE_METHODS or _marked(request.path_info, "steward_governance_work"):
        return None
    else:
        code = (
            TenancyCode.TENANT_SUSPENDED
            if status == "suspended"
            else TenancyCode.TENANT_OFFBOARDING
        )
        detail = f"The tenant is {status}: it can read but not change anything."
    return bad_input_response(
        request, status=403, code=code, title="Tenant not active", detail=detail
    )


def _basic_credentials(encoded: str) -> tuple[str, str]:
    try:
        name, _, secret = base64.b64decode(encoded.strip()).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return "", ""
    return name, secret


class ApiTokenMiddleware:
    """Resolve an `Authorization: Bearer` token once, for the scope middleware and DRF alike.

    HTTP Basic with the service account's name as the user and a token as the password
    is the same token, for clients that only speak Basic (Schema Registry clients).

    A bad token is not answered here: it is remembered on the request and DRF's
    authentication class turns it into a problem+json 401 with the precise code.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.api_token = None
        request.service_account = None
        request.api_auth_error = None
        # META rather than request.headers: every request pays for building the
        # headers mapping, and this middleware and RequestIdMiddleware run on all of them.
        header = request.META.get("HTTP_AUTHORIZATION", "")
        scheme, _, secret = header.partition(" ")
        account_name = None
        if scheme.lower() == "basic":
            # What Schema Registry clients send: the service account's name and a token.
            account_name, secret = _basic_credentials(secret)
            scheme = "bearer"
        if scheme.lower() == "bearer":
            try:
                token = api_token_authenticate(secret=secret.strip())
                if account_name is not None and token.service_account.name != account_name:
                    raise AuthenticationError(
                        "The token is not this service account's.", code=TenancyCode.TOKEN_INVALID
                    )
            except AuthenticationError as exc:
                request.api_auth_error = exc
            else:
                request.api_token = token
                request.service_account = token.service_account
        return self.get_response(request)


class SignedInReadsMiddleware:
    """Who is calling, read from the auth cache in one round trip: a console page's
    session, its person and their memberships or tenant choices
    (apps.tenancy.auth_cache.reads_together), for this request only."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        with auth_cache.reads_together():
            return self.get_response(request)


class TenantScopeMiddleware:
    """Run each request in one transaction, inside the scope its caller may see.

    - a service account bound to a tenant: that tenant;
    - a platform-wide service account: the system scope (reads all; writes go through
      services in the owning tenant's scope);
    - an operator: the tenant they chose to act for, or the system scope;
    - anyone else: their chosen tenant among their memberships, or the first;
    - anonymous, or a person with no membership: no scope, which reads as zero rows.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        declared = _view_scope(request)
        if declared == NO_SCOPE:
            return self.get_response(request)
        request.tenant = None
        request.membership_role = None
        request.actor = Actor()
        request.platform_wide = False
        if request.service_account is not None:
            request.actor = Actor(service_account=request.service_account)
            request.tenant = request.service_account.tenant
            request.platform_wide = request.tenant is None
        elif request.user.is_authenticated:
            request.actor = Actor(user=request.user)
            request.platform_wide = request.user.is_operator
            self._resolve_person(request)
        if declared == SYSTEM_SCOPE and request.platform_wide:
            scope = system_scope()
        elif request.tenant is not None:
            scope = tenant_scope(request.tenant)
        elif request.platform_wide:
            scope = system_scope()
        else:
            scope = transaction.atomic()
        refusal = tenant_status_refusal(request)
        if refusal is not None:
            return refusal
        request.steward_transaction = True  # error answers roll it back (core.api)
        with scope:
            return self.get_response(request)

    @staticmethod
    def _resolve_person(request) -> None:
        wanted = request.session.get(ACTING_TENANT_SESSION_KEY)
        if request.user.is_operator:
            request.tenant = selectors.tenant_by_id(wanted) if wanted else None
            return
        memberships = selectors.memberships_of_caller(request.user)
        if not wanted:
            # The first request of a session pins the tenant it starts in, and later
            # requests keep it: a membership someone else gives this person must not
            # move their open session to another tenant. Only their own act (switching
            # tenant) chooses another; a membership that ended leaves no tenant.
            wanted = request.session.get(SESSION_TENANT_SESSION_KEY)
            if not wanted and memberships:
                wanted = str(memberships[0].tenant_id)
                request.session[SESSION_TENANT_SESSION_KEY] = wanted
        chosen = next((m for m in memberships if str(m.tenant_id) == wanted), None)
        if chosen is not None:
            request.tenant = chosen.tenant
            request.membership_role = chosen.role
        request.available_memberships = memberships


def pin_session_tenant(sender, request, user, **kwargs):
    """At sign-in, pin the tenant the session starts in (see _resolve_person), so that
    later requests only read the session: a membership added afterwards never moves it.
    It is the tenant the person last chose, while they still belong to it; else their
    first. (Operators start with every tenant, as before.)"""
    if request is None or getattr(user, "is_operator", False):
        return
    memberships = selectors.memberships_of(user)
    if memberships:
        last = str(getattr(user, "last_chosen_tenant", None) or "")
        chosen = next((m for m in memberships if str(m.tenant_id) == last), memberships[0])
        request.session[SESSION_TENANT_SESSION_KEY] = str(chosen.tenant_id)
