"""One FilterSet per model, shared by the console lists and the API."""

import django_filters

from apps.tenancy.models import AuditEvent, Membership, ServiceAccount, Tenant


class TenantFilterSet(django_filters.FilterSet):
    home_region = django_filters.CharFilter(field_name="home_region__slug")

    class Meta:
        model = Tenant
        fields = ["status", "environment_class", "home_region"]


class MembershipFilterSet(django_filters.FilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug")
    user = django_filters.CharFilter(field_name="user__username")

    class Meta:
        model = Membership
        fields = ["tenant", "user", "role"]


class ServiceAccountFilterSet(django_filters.FilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug")

    class Meta:
        model = ServiceAccount
        fields = ["tenant", "is_active"]


class AuditEventFilterSet(django_filters.FilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug")
    action = django_filters.CharFilter(lookup_expr="startswith")
    actor = django_filters.CharFilter(field_name="actor_label")
    occurred_after = django_filters.IsoDateTimeFilter(field_name="occurred_at", lookup_expr="gte")
    occurred_before = django_filters.IsoDateTimeFilter(field_name="occurred_at", lookup_expr="lt")

    class Meta:
        model = AuditEvent
        fields = ["tenant", "action", "actor", "object_type", "object_id", "request_id"]
