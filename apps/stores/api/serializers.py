from rest_framework import serializers

from apps.core.api.serializers import StrictModelSerializer, StrictSerializer, TenantSlugField
from apps.stores import selectors
from apps.stores.models import (
    BenchmarkResult,
    ContractTestResult,
    MigrationPilot,
    PhysicalizationPolicy,
    ProfileCertification,
    ResidencyRule,
    Store,
    StoreBinding,
    StoreBindingChange,
    StoreProfile,
)
from apps.tenancy import selectors as tenancy

# Every tenant may be named: a caller acting for one tenant that names another is told
# so (tenant_for_write), rather than that the tenant does not exist.
ANY_TENANT = tenancy.tenants_visible_to(platform_wide=True, tenant=None)


def slug_of(queryset, field="slug", **kwargs):
    return serializers.SlugRelatedField(slug_field=field, queryset=queryset, **kwargs)


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
    exception_in_force = serializers.SerializerMethodField(
        help_text="An operator's residency exception for this binding has not ended."
    )
    awaits_decision = serializers.SerializerMethodField(
        help_text="Flagged, and waiting on an operator: retire it or grant an exception."
    )

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
            "workload_violation",
            "workload_violation_detected_at",
            "awaits_decision",
            "exception_in_force",
            "exception_reason",
            "exception_granted_by",
            "exception_granted_at",
            "exception_expires_at",
            "exception_ended_at",
            "data_purged_at",
            "data_purge_receipt",
            "history",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_exception_in_force(self, binding) -> bool:
        return binding.exception_in_force()

    def get_awaits_decision(self, binding) -> bool:
        return binding.awaits_decision


class GrantExceptionSerializer(StrictSerializer):
    reason = serializers.CharField(allow_blank=True)
    expires_at = serializers.DateTimeField()


class SetBindingSerializer(StrictSerializer):
    store = slug_of(Store.objects.all())
    profile = slug_of(StoreProfile.objects.all())
    region = slug_of(tenancy.region_list())
    tenant = TenantSlugField(
        queryset=ANY_TENANT,
        required=False,
        help_text="For platform callers; a tenant's own callers bind for their tenant.",
    )


class RetireSerializer(StrictSerializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class EvaluateSerializer(StrictSerializer):
    store = slug_of(Store.objects.all())
    region = slug_of(tenancy.region_list())
    profile = slug_of(StoreProfile.objects.all(), required=False)
    tenant = TenantSlugField(queryset=ANY_TENANT, required=False)


class StoreSerializer(StrictModelSerializer):
    owning_service = slug_of(selectors.owning_services(), field="name")
    data_class = slug_of(tenancy.data_class_list())

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
    profile = slug_of(StoreProfile.objects.all())

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
            "expires_at",
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
    tenant = slug_of(ANY_TENANT, required=False, allow_null=True)
    data_class = slug_of(tenancy.data_class_list(), required=False, allow_null=True)
    regions = slug_of(tenancy.region_list(), many=True, required=False)

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


EVIDENCE_READ_ONLY = ["id", "recorded_by", "recorded_at"]
# Blank is the service's to refuse, with its own stable code (run_required, …).
RUN = {"run_reference": {"allow_blank": True}}


class BenchmarkResultSerializer(StrictModelSerializer):
    profile = slug_of(StoreProfile.objects.all(), required=False, allow_null=True)

    class Meta:
        model = BenchmarkResult
        fields = [
            "id",
            "provider",
            "query_shape",
            "profile",
            "figure",
            "threshold",
            "unit",
            "passed",
            "run_reference",
            "recorded_by",
            "recorded_at",
        ]
        read_only_fields = EVIDENCE_READ_ONLY
        extra_kwargs = RUN


class ContractTestResultSerializer(StrictModelSerializer):
    class Meta:
        model = ContractTestResult
        fields = [
            "id",
            "provider",
            "contract",
            "passed",
            "run_reference",
            "recorded_by",
            "recorded_at",
        ]
        read_only_fields = EVIDENCE_READ_ONLY
        extra_kwargs = RUN


class MigrationPilotSerializer(StrictModelSerializer):
    store = slug_of(Store.objects.all())
    profile = slug_of(StoreProfile.objects.all())

    class Meta:
        model = MigrationPilot
        fields = [
            "id",
            "store",
            "profile",
            "outcome",
            "started_at",
            "ended_at",
            "notes",
            "run_reference",
            "recorded_by",
            "recorded_at",
        ]
        read_only_fields = EVIDENCE_READ_ONLY
        extra_kwargs = {**RUN, "started_at": {"required": False}}


class PhysicalizationPolicySerializer(StrictModelSerializer):
    profile = slug_of(StoreProfile.objects.all())

    class Meta:
        model = PhysicalizationPolicy
        fields = [
            "id",
            "profile",
            "workload_class",
            "kind",
            "description",
            "rollback_guidance",
            "run_reference",
            "recorded_by",
            "recorded_at",
        ]
        read_only_fields = EVIDENCE_READ_ONLY
        extra_kwargs = {**RUN, "rollback_guidance": {"allow_blank": True}}
