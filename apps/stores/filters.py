"""One FilterSet per model, for the console list and the API list alike (the API's
FilterSet base, so its boolean filters read `true`/`false` as the API always has)."""

import django_filters
from django_filters.rest_framework import FilterSet

from apps.stores.models import (
    BenchmarkResult,
    ContractTestResult,
    MigrationPilot,
    PhysicalizationPolicy,
    ProfileCertification,
    ResidencyRule,
    Store,
    StoreBinding,
    StoreProfile,
)


class StoreBindingFilterSet(FilterSet):
    """`store` is the console's name for the store filter and `store__slug` the API's;
    both stay, since links and clients use them."""

    inline = ("status", "store", "flagged")
    status = django_filters.ChoiceFilter(choices=StoreBinding.Status.choices)
    store = django_filters.CharFilter(field_name="store__slug", label="Store")
    flagged = django_filters.BooleanFilter(label="Residency violation", method="filter_flagged")

    class Meta:
        model = StoreBinding
        fields = ["status", "store", "flagged", "store__slug", "region__slug", "tenant__slug"]

    def filter_flagged(self, queryset, name, value):
        return queryset.exclude(violation="") if value else queryset.filter(violation="")


class ResidencyRuleFilterSet(FilterSet):
    inline = ("effect", "is_exception")

    class Meta:
        model = ResidencyRule
        fields = ["effect", "is_exception", "tenant__slug", "data_class__slug"]


class StoreFilterSet(FilterSet):
    inline = ("workload_class", "category")

    class Meta:
        model = Store
        fields = ["workload_class", "category"]


class StoreProfileFilterSet(FilterSet):
    inline = ("engine", "shape")

    class Meta:
        model = StoreProfile
        fields = ["engine", "shape"]


class ProfileCertificationFilterSet(FilterSet):
    inline = ("workload_class",)

    class Meta:
        model = ProfileCertification
        fields = ["workload_class", "profile__slug"]


class BenchmarkResultFilterSet(FilterSet):
    inline = ("provider", "passed")

    class Meta:
        model = BenchmarkResult
        fields = ["provider", "query_shape", "profile__slug", "passed"]


class ContractTestResultFilterSet(FilterSet):
    inline = ("provider", "passed")

    class Meta:
        model = ContractTestResult
        fields = ["provider", "contract", "passed"]


class MigrationPilotFilterSet(FilterSet):
    inline = ("outcome",)

    class Meta:
        model = MigrationPilot
        fields = ["store__slug", "profile__slug", "outcome"]


class PhysicalizationPolicyFilterSet(FilterSet):
    inline = ("kind", "workload_class")

    class Meta:
        model = PhysicalizationPolicy
        fields = ["profile__slug", "workload_class", "kind"]
