from rest_framework import serializers

from apps.compute.models import ComputeBatch
from apps.core.api.serializers import StrictModelSerializer, StrictSerializer, TenantSlugField
from apps.tenancy import selectors as tenancy_selectors


class ComputeBatchSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = ComputeBatch
        fields = [
            "id",
            "tenant",
            "idempotency_key",
            "workflow_instance_id",
            "workflow_step_id",
            "status",
            "result_summary",
            "created_at",
            "updated_at",
            "finished_at",
        ]
        read_only_fields = fields


class BatchSubmitSerializer(StrictSerializer):
    """The `submit_compute` step. A platform-wide caller names the tenant; a tenant-bound
    one submits for its own tenant."""

    idempotency_key = serializers.CharField(max_length=200)
    # 64: the workflow instance is the step_completed event's aggregate id.
    workflow_instance_id = serializers.CharField(max_length=64)
    workflow_step_id = serializers.CharField(max_length=64)
    # Any tenant by its slug; tenant_for_write decides whether the caller may name it.
    tenant = TenantSlugField(
        queryset=tenancy_selectors.tenants_visible_to(platform_wide=True, tenant=None),
        required=False,
    )


class BatchStatusSerializer(StrictSerializer):
    status = serializers.ChoiceField(choices=ComputeBatch.Status.choices)
    result_summary = serializers.JSONField(required=False)

    def validate_result_summary(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("The result summary is a JSON object.")
        return value
