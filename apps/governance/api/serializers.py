from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from apps.core.api.serializers import StrictModelSerializer, StrictSerializer, TenantSlugField
from apps.governance.models import ExportArtifact, GovernanceOrder, GovernanceTask, OrderApproval
from apps.governance.orders import selectors, services


class ApprovalSerializer(StrictModelSerializer):
    approver = serializers.CharField(source="approver.username", read_only=True)

    class Meta:
        model = OrderApproval
        fields = ["approver", "approve", "comment", "at"]
        read_only_fields = fields


class PhaseSerializer(StrictSerializer):
    number = serializers.IntegerField()
    slug = serializers.CharField()
    title = serializers.CharField()
    state = serializers.ChoiceField(choices=["done", "current", "overdue", "waiting"])
    tasks = serializers.IntegerField()
    completed = serializers.IntegerField()


class ArtifactSerializer(StrictModelSerializer):
    available = serializers.BooleanField(read_only=True)

    class Meta:
        model = ExportArtifact
        fields = ["id", "size", "sha256", "created_at", "expires_at", "deleted_at", "available"]
        read_only_fields = fields


class TaskSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    # Tasks of a whole tenant (an export, a subscription to close) name no store.
    store = serializers.SlugRelatedField(slug_field="slug", read_only=True, allow_null=True)
    overdue = serializers.BooleanField(source="is_overdue", read_only=True)

    class Meta:
        model = GovernanceTask
        fields = [
            "id",
            "order",
            "tenant",
            "phase",
            "kind",
            "owner",
            "store",
            "status",
            "attempt",
            "issued_at",
            "due_at",
            "acknowledged_at",
            "settled_at",
            "overdue",
            "overdue_at",
            "detail",
            "receipt",
            "failure",
        ]
        read_only_fields = fields


class ErasureWaitSerializer(StrictSerializer):
    """A binding a deletion waits for before it may complete (its last phase)."""

    binding = serializers.CharField()
    store = serializers.CharField()
    owner = serializers.CharField()
    status = serializers.CharField()
    covered = serializers.BooleanField()
    reason = serializers.CharField()
    receipt = serializers.JSONField(allow_null=True)


class OrderSerializer(StrictModelSerializer):
    tenant = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    requested_by = serializers.CharField(source="requested_by.username", read_only=True)
    approvals = ApprovalSerializer(many=True, read_only=True)
    phases = serializers.SerializerMethodField()
    tasks = TaskSerializer(many=True, read_only=True)
    starts_at = serializers.SerializerMethodField()
    artifact = serializers.SerializerMethodField()
    waiting_for = serializers.SerializerMethodField()

    class Meta:
        model = GovernanceOrder
        fields = [
            "id",
            "tenant",
            "kind",
            "status",
            "reason",
            "requested_by",
            "approvals_needed",
            "approvals",
            "created_at",
            "decided_at",
            "starts_at",
            "started_at",
            "phase",
            "phases",
            "tasks",
            "completed_at",
            "final_digest",
            "artifact",
            "waiting_for",
        ]
        read_only_fields = fields

    @extend_schema_field(PhaseSerializer(many=True))
    def get_phases(self, order):
        return selectors.order_progress(order)

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_starts_at(self, order):
        return services.order_starts_at(order)

    @extend_schema_field(ArtifactSerializer(allow_null=True))
    def get_artifact(self, order):
        artifact = selectors.export_artifact_of(order)
        return ArtifactSerializer(artifact).data if artifact else None

    @extend_schema_field(ErasureWaitSerializer(many=True))
    def get_waiting_for(self, order):
        return selectors.erasure_waits(order)


class OrderRequestSerializer(StrictSerializer):
    tenant = TenantSlugField(queryset=selectors.tenant_choices(), required=False)
    kind = serializers.ChoiceField(choices=GovernanceOrder.Kind.choices)
    reason = serializers.CharField(max_length=2000)


class CommentSerializer(StrictSerializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)


class ReasonSerializer(StrictSerializer):
    reason = serializers.CharField(max_length=2000)


class ReceiptItemSerializer(StrictSerializer):
    what = serializers.CharField(max_length=200)
    action = serializers.CharField(max_length=32, help_text="deleted, redacted, closed, …")
    count = serializers.IntegerField(min_value=0)


class ReceiptSerializer(StrictSerializer):
    """What the owner did: one item per thing deleted or redacted, with counts, and a
    SHA-256 of the owner's own record of the work."""

    items = ReceiptItemSerializer(many=True, allow_empty=False)
    digest = serializers.RegexField(r"^[0-9a-f]{64}$")
    note = serializers.CharField(required=False, allow_blank=True, max_length=2000)


class EvidenceEntrySerializer(StrictSerializer):
    sequence = serializers.IntegerField()
    kind = serializers.CharField()
    at = serializers.CharField()
    data = serializers.DictField()
    previous_digest = serializers.CharField()
    digest = serializers.CharField()


class EvidenceDocumentSerializer(StrictSerializer):
    order = serializers.UUIDField()
    tenant = serializers.UUIDField()
    kind = serializers.CharField()
    algorithm = serializers.CharField(required=False)
    entries = EvidenceEntrySerializer(many=True)
    final_digest = serializers.CharField()


class VerificationSerializer(StrictSerializer):
    valid = serializers.BooleanField()
    first_bad_entry = serializers.IntegerField(allow_null=True)
    final_digest = serializers.CharField()
