"""API permissions. The default is DenyAll: a view grants access by naming its classes."""

from __future__ import annotations

from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS, BasePermission

from apps.tenancy.models import owning_tenant_id


class DenyAll(BasePermission):
    def has_permission(self, request, view):
        return False


def _caller_is_authenticated(request) -> bool:
    return request.service_account is not None or request.user.is_authenticated


class StewardAccess(BasePermission):
    """Access by token scope for services and by role for people.

    A view sets `scope_app` (the app its token scopes name) and `write_access`, a set
    of who may change things: "operator", "tenant_admin", "platform_service",
    "tenant_service" (a view may narrow it per action in `get_write_access()`).
    Reading is open to every authenticated caller of the app: row-level security and
    the view's queryset decide which rows they see.
    """

    def has_permission(self, request, view):
        if not _caller_is_authenticated(request):
            raise exceptions.NotAuthenticated()
        write = request.method not in SAFE_METHODS
        if request.service_account is not None:
            needed = f"{view.scope_app}:{'write' if write else 'read'}"
            if not request.api_token.allows(needed):
                raise exceptions.PermissionDenied(
                    f"The token lacks the {needed} scope.", code="missing_scope"
                )
            if not write:
                return True
            kind = "platform_service" if request.platform_wide else "tenant_service"
            return kind in view.get_write_access()
        if not write:
            return True
        if request.user.is_operator:
            return "operator" in view.get_write_access()
        return "tenant_admin" in view.get_write_access() and request.membership_role == "admin"

    def has_object_permission(self, request, view, obj):
        if request.method in SAFE_METHODS or request.platform_wide:
            return True
        # A tenant-bound caller changes only its own tenant's objects.
        return request.tenant is not None and owning_tenant_id(obj) == request.tenant.pk


class IsAuthenticatedCaller(BasePermission):
    def has_permission(self, request, view):
        if not _caller_is_authenticated(request):
            raise exceptions.NotAuthenticated()
        return True
