"""API permissions. The default is DenyAll: a view grants access by naming its classes."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission

from apps.core.codes import CoreCode
from apps.core.scope import owning_tenant_id

OPERATOR = "operator"
TENANT_ADMIN = "tenant_admin"
TENANT_MEMBER = "tenant_member"
PLATFORM_SERVICE = "platform_service"
TENANT_SERVICE = "tenant_service"
EVERYONE = frozenset({OPERATOR, TENANT_ADMIN, TENANT_MEMBER, PLATFORM_SERVICE, TENANT_SERVICE})
# Platform-wide callers: operators and platform services.
PLATFORM = frozenset({OPERATOR, PLATFORM_SERVICE})


class DenyAll(BasePermission):
    def has_permission(self, request, view):
        return False


def caller_kind(request) -> str | None:
    """What kind of caller this is, as the scope middleware resolved it."""
    if request.service_account is not None:
        return PLATFORM_SERVICE if request.platform_wide else TENANT_SERVICE
    if not request.user.is_authenticated:
        return None
    if request.user.is_operator:
        return OPERATOR
    return TENANT_ADMIN if request.membership_role == "admin" else TENANT_MEMBER


class StewardAccess(BasePermission):
    """Access by token scope for services and by kind of caller for everyone.

    A view sets `scope_app` (the app its token scopes name), `read_access` (who may
    read; everyone by default) and `write_access` (who may change things; nobody by
    default), and may narrow them per action in `get_read_access()` /
    `get_write_access()`. Row-level security and the view's queryset then decide
    which rows a permitted caller sees.

    A view whose POST only computes an answer (a what-if, a verification) sets
    `read_only_post = True`: its POST needs only read access and the read scope.
    """

    def has_permission(self, request, view):
        kind = caller_kind(request)
        if kind is None:
            raise exceptions.NotAuthenticated()
        write = request.method not in SAFE_METHODS and not (
            request.method == "POST" and getattr(view, "read_only_post", False)
        )
        if request.service_account is not None:
            needed = f"{view.scope_app}:{'write' if write else 'read'}"
            if not request.api_token.allows(needed):
                raise exceptions.PermissionDenied(
                    f"The token lacks the {needed} scope.", code=CoreCode.MISSING_SCOPE
                )
        allowed = view.get_write_access() if write else view.get_read_access()
        return kind in allowed

    def has_object_permission(self, request, view, obj):
        if request.method in SAFE_METHODS or request.platform_wide:
            return True
        # A tenant-bound caller changes only its own tenant's objects.
        return request.tenant is not None and owning_tenant_id(obj) == request.tenant.pk


class IsAuthenticatedCaller(BasePermission):
    def has_permission(self, request, view):
        if caller_kind(request) is None:
            raise exceptions.NotAuthenticated()
        return True
