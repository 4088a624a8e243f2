from rest_framework import serializers

from apps.core.api.rows import RowShape
from apps.core.api.serializers import StrictModelSerializer, StrictSerializer
from apps.tenancy.models import TOKEN_SCOPES, AuditEvent, DataClass, Membership, Region, Tenant


class RegionSerializer(StrictModelSerializer):
    class Meta:
        model = Region
        fields = ["id", "slug", "name", "jurisdiction"]


class DataClassSerializer(StrictModelSerializer):
    class Meta:
        model = DataClass
        fields = ["id", "slug", "name", "sensitivity", "description"]


class TenantSerializer(StrictModelSerializer):
    home_region = serializers.SlugRelatedField(slug_field="slug", queryset=Region.objects.all())

    class Meta:
        model = Tenant
        fields = [
            "id",
            "slug",
            "name",
            "environment_class",
            "home_region",
            "status",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]


TENANT_ROWS = RowShape(TenantSerializer)


class MembershipSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    user = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "tenant", "user", "role", "created_at"]


class MembershipWriteSerializer(StrictSerializer):
    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(choices=Membership.Role.choices)


class InvitationSentSerializer(serializers.Serializer):
    """The same answer whoever the username names, or whether it names anyone."""

    tenant = serializers.CharField()
    username = serializers.CharField()
    role = serializers.CharField()
    detail = serializers.CharField()


class InvitationSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Membership
        fields = ["id", "tenant", "role", "created_at"]


class AuditEventSerializer(StrictModelSerializer):
    # Platform-wide changes (regions, catalog rows, people) belong to no tenant.
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "occurred_at",
            "tenant",
            "actor_label",
            "action",
            "object_type",
            "object_id",
            "object_repr",
            "changes",
            "request_id",
        ]


class WhoAmISerializer(StrictSerializer):
    kind = serializers.ChoiceField(choices=["user", "service"])
    name = serializers.CharField()
    tenant = serializers.CharField(allow_null=True)
    platform_wide = serializers.BooleanField()
    scopes = serializers.ListField(child=serializers.ChoiceField(choices=TOKEN_SCOPES))
