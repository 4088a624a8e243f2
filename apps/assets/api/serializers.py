from rest_framework import serializers

from apps.assets.models import Asset, WorkflowCallback
from apps.core.api.rows import RowShape
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
            "delegation_failure",
            "status_reason",
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
            "delegation_failure",
            "status_reason",
            "decided_at",
            "decided_by",
            "decision_reason",
            "created_at",
            "updated_at",
        ]


# The list's rows: Asset.is_workflow_managed, computed from the row's columns (the
# enum's member read once: each read of a choices member goes through its metaclass).
_REQUESTED = str(Asset.Status.REQUESTED)
ASSET_ROWS = RowShape(
    AssetSerializer,
    computed={
        "is_workflow_managed": lambda row: (
            row["workflow_instance_id"] is not None
            and row["status"] == _REQUESTED
            and not row["workflow_link_stale"]
        )
    },
    extra=("workflow_link_stale",),
)


class RequestApprovalSerializer(StrictSerializer):
    delegate = serializers.BooleanField(
        default=True, help_text="Let the Workflow Service decide (the default)."
    )


class DecisionSerializer(StrictSerializer):
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class AssetUpdateSerializer(StrictModelSerializer):
    """What PATCH may change: the name and the description (not while Requested)."""

    class Meta:
        model = Asset
        fields = ["name", "description"]


class AssetRetireSerializer(StrictSerializer):
    reason = serializers.CharField(help_text="Why the asset is retired (required).")


class CallbackReceiptSerializer(serializers.ModelSerializer):
    """A callback the Workflow Service sent about the asset, under any of its instances."""

    class Meta:
        model = WorkflowCallback
        fields = [
            "id",
            "workflow_instance_id",
            "decision",
            "reason",
            "callback_id",
            "outcome",
            "received_at",
            "applied_at",
        ]
        read_only_fields = fields
