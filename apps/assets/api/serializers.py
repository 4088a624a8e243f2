from rest_framework import serializers

from apps.assets.models import Asset
from apps.core.api.serializers import StrictModelSerializer, StrictSerializer


class AssetSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    is_workflow_managed = serializers.BooleanField(read_only=True)

    class Meta:
        model = Asset
        fields = [
            "id",
            "tenant",
            "name",
            "description",
            "status",
            "workflow_instance_id",
            "is_workflow_managed",
            "decided_at",
            "decided_by",
            "decision_reason",
            "created_at",
            "updated_at",
        ]
        read_only_fields = [
            "id",
            "status",
            "workflow_instance_id",
            "decided_at",
            "decided_by",
            "decision_reason",
            "created_at",
            "updated_at",
        ]


class RequestApprovalSerializer(StrictSerializer):
    delegate = serializers.BooleanField(
        default=True, help_text="Let the Workflow Service decide (the default)."
    )


class DecisionSerializer(StrictSerializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")
