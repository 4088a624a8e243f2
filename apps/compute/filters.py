import django_filters

from apps.compute.models import ComputeBatch, WorkflowBatchLink


class ComputeBatchFilterSet(django_filters.FilterSet):
    inline = ("status", "tenant")

    tenant = django_filters.CharFilter(field_name="tenant__slug")

    class Meta:
        model = ComputeBatch
        fields = ["status", "workflow_instance_id", "workflow_step_id", "tenant"]


class WorkflowBatchLinkFilterSet(django_filters.FilterSet):
    inline = ("stale", "tenant")

    tenant = django_filters.CharFilter(field_name="tenant__slug")
    stale = django_filters.BooleanFilter(field_name="is_stale", label="Stale")

    class Meta:
        model = WorkflowBatchLink
        fields = ["workflow_instance_id", "tenant", "stale"]
