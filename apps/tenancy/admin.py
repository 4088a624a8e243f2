"""Raw data for operators.

Reference data (regions, data classes) and people are edited here. Tenant-owned rows
and tenants themselves are read-only: their changes have rules, audit rows and a
tenant scope, which the console and the API provide through the services.
"""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin

from apps.tenancy.models import (
    ApiToken,
    AuditEvent,
    DataClass,
    Membership,
    Region,
    ServiceAccount,
    Tenant,
    User,
)


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


# Sign-in locks live in Redis (apps.tenancy.attempts), not on the account.
admin.site.register(User, BaseUserAdmin)


admin.site.register(Region)
admin.site.register(DataClass)


@admin.register(Tenant)
class TenantAdmin(ReadOnlyAdmin):
    list_display = ("slug", "name", "environment_class", "home_region", "status")
    list_filter = ("status", "environment_class", "home_region")
    list_select_related = ("home_region",)
    search_fields = ("slug", "name")


@admin.register(Membership)
class MembershipAdmin(ReadOnlyAdmin):
    list_display = ("tenant", "user", "role")
    list_select_related = ("tenant", "user")


@admin.register(ServiceAccount)
class ServiceAccountAdmin(ReadOnlyAdmin):
    list_display = ("name", "tenant", "is_active")
    list_select_related = ("tenant",)


@admin.register(ApiToken)
class ApiTokenAdmin(ReadOnlyAdmin):
    list_display = ("prefix", "service_account", "name", "expires_at", "last_used_at", "revoked_at")
    list_select_related = ("service_account",)
    exclude = ("digest",)


@admin.register(AuditEvent)
class AuditEventAdmin(ReadOnlyAdmin):
    list_display = ("occurred_at", "tenant", "actor_label", "action", "object_type", "object_id")
    list_select_related = ("tenant",)
    list_filter = ("action",)
