import django_filters

from apps.assets.models import Asset, AssetQuerySet


class AssetFilterSet(django_filters.FilterSet):
    inline = ("status", "workflow_managed", "tenant")

    workflow_managed = django_filters.BooleanFilter(
        method="filter_workflow_managed", label="Waiting on the Workflow Service"
    )
    delegation_failed = django_filters.BooleanFilter(
        method="filter_delegation_failed", label="Delegation refused or failed"
    )
    tenant = django_filters.CharFilter(field_name="tenant__slug")

    class Meta:
        model = Asset
        fields = [
            "status",
            "workflow_instance_id",
            "workflow_managed",
            "delegation_failed",
            "tenant",
        ]

    def filter_workflow_managed(self, queryset, name, value):
        return _those_or_the_others(queryset, value, AssetQuerySet.workflow_managed)

    def filter_delegation_failed(self, queryset, name, value):
        return _those_or_the_others(queryset, value, AssetQuerySet.delegation_failed)


def _those_or_the_others(queryset, value, narrow):
    """True: the assets `narrow` selects; False: all the others; None: every asset."""
    if value is None:
        return queryset
    chosen = narrow(queryset)
    return chosen if value else queryset.exclude(pk__in=chosen.values("pk"))
