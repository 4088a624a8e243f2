"""Raw data for operators. Writes that have rules go through the console and the API."""

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin as BaseUserAdmin
from guardian.admin import GuardedModelAdmin

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


@admin.register(User)
class UserAdmin(BaseUserAdmin):
    fieldsets = (
        *BaseUserAdmin.fieldsets,
        ("Lockout", {"fields": ("failed_login_count", "locked_until")}),
    )


@admin.register(Tenant)
class TenantAdmin(GuardedModelAdmin):
    list_display = ("slug", "name", "environment_class", "home_region", "status")
    list_filter = ("status", "environment_class", "home_region")
    search_fields = ("slug", "name")


admin.site.register(Region)
admin.site.register(DataClass)


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ("tenant", "user", "role")
    list_select_related = ("tenant", "user")


@admin.register(ServiceAccount)
class ServiceAccountAdmin(admin.ModelAdmin):
    list_display = ("name", "tenant", "is_active")
    list_select_related = ("tenant",)


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "service_account", "name", "expires_at", "last_used_at", "revoked_at")
    list_select_related = ("service_account",)
    exclude = ("digest",)
    readonly_fields = ("prefix", "last_used_at", "created_at")

    def has_add_permission(self, request):
        return False  # tokens are issued by the service, which shows the secret once


@admin.register(AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ("occurred_at", "tenant", "actor_label", "action", "object_type", "object_id")
    list_select_related = ("tenant",)
    list_filter = ("action",)

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
