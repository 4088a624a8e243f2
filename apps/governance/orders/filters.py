"""One FilterSet per model, shared by the console lists and the API: the parameter
names are the API's (its published schema), the console's filter form shows them."""

import django_filters

from apps.governance.models import GovernanceOrder, GovernanceTask


class OrderFilterSet(django_filters.FilterSet):
    inline = ("kind", "status")

    class Meta:
        model = GovernanceOrder
        fields = ["kind", "status", "tenant__slug"]


class OwnerTaskFilterSet(django_filters.FilterSet):
    inline = ("status", "kind")

    class Meta:
        model = GovernanceTask
        fields = ["status", "kind", "owner", "order", "tenant__slug"]
