"""The API's filter backend (apps.core.api.filtering) skips the FilterSet only when the
request names none of its parameters: the parameters are exactly those its widgets read,
ranges included, and the rows are the same either way."""

import django_filters
import pytest
from django.http import QueryDict
from django.test import RequestFactory
from rest_framework.request import Request

from apps.assets import services as assets
from apps.assets.filters import AssetFilterSet
from apps.assets.models import Asset
from apps.core.api.filtering import FilterBackend, filter_parameters
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import tenant_scope


class Ranges(django_filters.FilterSet):
    created = django_filters.DateFromToRangeFilter(field_name="created_at")
    size = django_filters.RangeFilter(field_name="pk")
    name = django_filters.CharFilter()
    status = django_filters.MultipleChoiceFilter(choices=Asset.Status.choices)

    class Meta:
        model = Asset
        fields = ["workflow_instance_id"]


def test_the_parameters_are_what_the_widgets_read():
    assert filter_parameters(Ranges) == {
        "created_after",
        "created_before",
        "size_min",
        "size_max",
        "name",
        "status",
        "workflow_instance_id",
    }
    assert "workflow_managed" in filter_parameters(AssetFilterSet)


class View:
    filterset_class = AssetFilterSet


def _filter(query: str, queryset):
    request = Request(RequestFactory().get(f"/x?{query}"))
    return FilterBackend().filter_queryset(request, queryset, View())


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "built"),
    [
        ("", False),
        ("cursor=abc&page_size=5", False),
        ("status=approved", True),
        ("workflow_managed=true", True),
        ("status=", True),
    ],
)
def test_the_filterset_is_built_only_when_a_parameter_names_it(query, built, tenant_a, monkeypatch):
    for n in range(3):
        assets.asset_create(actor=SYSTEM_ACTOR, tenant=tenant_a, name=f"filtered {n}")
    made = []
    original = AssetFilterSet.__init__
    monkeypatch.setattr(
        AssetFilterSet, "__init__", lambda self, *a, **k: made.append(1) or original(self, *a, **k)
    )
    with tenant_scope(tenant_a):
        queryset = Asset.objects.order_by("pk")
        rows = list(_filter(query, queryset))
        monkeypatch.setattr(AssetFilterSet, "__init__", original)
        expected = list(AssetFilterSet(QueryDict(query), queryset=queryset).qs)
    assert bool(made) is built
    assert rows == expected


def test_finding_the_parameters_leaves_the_class_filters_as_they_were():
    """Each FilterSet deep-copies its class's filters; a form field made on them would be
    copied into every request's FilterSet."""
    filter_parameters(Ranges)
    assert not any(hasattr(f, "_field") for f in Ranges.base_filters.values())
