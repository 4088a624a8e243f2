from rest_framework import serializers

from apps.core.api.serializers import StrictModelSerializer, StrictSerializer
from apps.registry.models import Service
from apps.stores.models import (
    ProfileCertification,
    ResidencyRule,
    Store,
    StoreBinding,
    StoreBindingChange,
    StoreProfile,
)
from apps.tenancy.models import DataClass, Region, Tenant


def slug_of(model, field="slug", **kwargs):
    return serializers.SlugRelatedField(slug_field=field, queryset=model.objects.all(), **kwargs)


class BindingChangeSerializer(StrictModelSerializer):
    class Meta:
        model = StoreBindingChange
        fields = ["from_status", "to_status", "reason", "actor_label", "at"]


class BindingSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    store = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    profile = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    region = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    history = BindingChangeSerializer(many=True, read_only=True)

    class Meta:
        model = StoreBinding
        fields = [
            "id",
            "tenant",
            "store",
            "profile",
            "region",
            "status",
            "status_reason",
            "key_reference",
            "connection_reference",
            "residency_verdict",
            "workload_verdict",
            "violation",
            "violation_detected_at",
            "history",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class SetBindingSerializer(StrictSerializer):
    store = slug_of(Store)
    profile = slug_of(StoreProfile)
    region = slug_of(Region)
    tenant = slug_of(
        Tenant,
        required=False,
        help_text="For platform callers; a tenant's own callers bind for their tenant.",
    )


class RetireSerializer(StrictSerializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class EvaluateSerializer(StrictSerializer):
    store = slug_of(Store)
    region = slug_of(Region)
    profile = slug_of(StoreProfile, required=False)
    tenant = slug_of(Tenant, required=False)


class StoreSerializer(StrictModelSerializer):
    owning_service = serializers.SlugRelatedField(slug_field="name", queryset=Service.objects.all())
    data_class = slug_of(DataClass)

    class Meta:
        model = Store
        fields = [
            "id",
            "slug",
            "name",
            "owning_service",
            "data_class",
            "category",
            "workload_class",
            "description",
        ]


class CertificationSerializer(StrictModelSerializer):
    profile = slug_of(StoreProfile)

    class Meta:
        model = ProfileCertification
        fields = [
            "id",
            "profile",
            "workload_class",
            "certified_by",
            "certified_at",
            "benchmark_reference",
            "notes",
            "revoked_at",
        ]
        read_only_fields = ["id", "certified_by", "certified_at", "revoked_at"]


class ProfileSerializer(StrictModelSerializer):
    certified_for = serializers.SerializerMethodField()

    class Meta:
        model = StoreProfile
        fields = [
            "id",
            "slug",
            "name",
            "engine",
            "shape",
            "provides_retention_cleanup",
            "description",
            "certified_for",
        ]

    def get_certified_for(self, profile) -> list[str]:
        return sorted(
            c.workload_class for c in profile.certifications.all() if c.revoked_at is None
        )


class RuleSerializer(StrictModelSerializer):
    tenant = slug_of(Tenant, required=False, allow_null=True)
    data_class = slug_of(DataClass, required=False, allow_null=True)
    regions = slug_of(Region, many=True, required=False)

    class Meta:
        model = ResidencyRule
        fields = [
            "id",
            "tenant",
            "data_class",
            "effect",
            "regions",
            "geographies",
            "is_exception",
            "reason",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["id", "created_at", "updated_at"]
