"""One FilterSet per model, shared by the console lists and the API: the parameter
names are the API's (its published schema), the console's filter form shows them."""

import django_filters

from apps.governance.models import LegalHold, RetentionRule, RetentionSweep


class RetentionRuleFilterSet(django_filters.FilterSet):
    inline = ("action", "enabled")

    class Meta:
        model = RetentionRule
        fields = ["action", "locked", "enabled", "data_class__slug", "store__slug"]


class LegalHoldFilterSet(django_filters.FilterSet):
    inline = ("released_at__isnull", "tenant__slug")

    class Meta:
        model = LegalHold
        fields = {"tenant__slug": ["exact"], "released_at": ["isnull"]}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The console's form says what `released_at__isnull` means. Set on the bound
        # filters only: a label on the declaration would become the API parameter's
        # description in the published schema.
        self.filters["released_at__isnull"].label = "Active"


class RetentionSweepFilterSet(django_filters.FilterSet):
    inline = ("status",)

    class Meta:
        model = RetentionSweep
        fields = ["status"]
