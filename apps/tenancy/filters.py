"""One FilterSet per model, shared by the console lists and the API."""

from datetime import UTC

import django_filters
from django.core.exceptions import ValidationError
from django_filters.fields import IsoDateTimeField

from apps.core.codes import CoreCode
from apps.tenancy.models import AuditEvent, Membership, ServiceAccount, Tenant


class InstantField(IsoDateTimeField):
    def to_python(self, value):
        parsed = super().to_python(value)
        if parsed is None or parsed.tzinfo is None:
            return parsed
        # In UTC: Python reads offsets up to ±23:59, PostgreSQL takes ±15:59, and a
        # wider one failed in the database (500) instead of naming the same instant.
        try:
            return parsed.astimezone(UTC)
        except OverflowError:
            raise ValidationError(self.error_messages["invalid"], code=CoreCode.INVALID) from None


class InstantFilter(django_filters.IsoDateTimeFilter):
    field_class = InstantField


class TenantFilterSet(django_filters.FilterSet):
    inline = ("status", "environment_class")

    home_region = django_filters.CharFilter(field_name="home_region__slug")

    class Meta:
        model = Tenant
        fields = ["status", "environment_class", "home_region"]


class MembershipFilterSet(django_filters.FilterSet):
    inline = ("role", "tenant")

    tenant = django_filters.CharFilter(field_name="tenant__slug")
    user = django_filters.CharFilter(field_name="user__username")

    class Meta:
        model = Membership
        fields = ["tenant", "user", "role"]


class ServiceAccountFilterSet(django_filters.FilterSet):
    inline = ("is_active", "tenant")

    tenant = django_filters.CharFilter(field_name="tenant__slug")

    class Meta:
        model = ServiceAccount
        fields = ["tenant", "is_active"]


class AuditEventFilterSet(django_filters.FilterSet):
    inline = ("action", "actor", "tenant")

    tenant = django_filters.CharFilter(field_name="tenant__slug")
    action = django_filters.CharFilter(lookup_expr="startswith")
    actor = django_filters.CharFilter(field_name="actor_label")
    occurred_after = InstantFilter(field_name="occurred_at", lookup_expr="gte")
    occurred_before = InstantFilter(field_name="occurred_at", lookup_expr="lt")

    class Meta:
        model = AuditEvent
        fields = ["tenant", "action", "actor", "object_type", "object_id", "request_id"]
