import django_filters

from apps.assets.models import Asset


class AssetFilterSet(django_filters.FilterSet):
    workflow_managed = django_filters.BooleanFilter(
        method="filter_workflow_managed", label="Waiting on the Workflow Service"
    )
    tenant = django_filters.CharFilter(field_name="tenant__slug")

    class Meta:
        model = Asset
        fields = ["status", "workflow_instance_id", "workflow_managed", "tenant"]

    def filter_workflow_managed(self, queryset, name, value):
        if value is None:
            return queryset
        managed = queryset.workflow_managed()
        return managed if value else queryset.exclude(pk__in=managed.values("pk"))
