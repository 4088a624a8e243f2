"""The API's filter backend (apps.core.api.filtering) skips the FilterSet only when the
request names none of its parameters: the parameters are exactly those its widgets read,
ranges included, and the rows are the same either way."""

import uuid

import django_filters
import pytest
from django.http import QueryDict
from django.test import RequestFactory
from django_filters.utils import translate_validation
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from apps.assets import services as assets
from apps.assets.filters import AssetFilterSet
from apps.assets.models import Asset
from apps.core.api.filtering import FilterBackend, filter_parameters, named_filters, narrowed
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from apps.governance.retention.filters import LegalHoldFilterSet
from apps.stores.filters import StoreBindingFilterSet
from apps.stores.models import StoreBinding
from tests.governance.factories import live_binding


@pytest.fixture(autouse=True)
def _fresh_narrowed_classes():
    # A class judged while a test had patched it must not be remembered for the next.
    narrowed.cache_clear()
    yield
    narrowed.cache_clear()


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


def test_a_narrowed_filterset_holds_only_the_filters_named_in_their_order():
    both = narrowed(AssetFilterSet, frozenset({"tenant", "status"}))
    assert list(both.base_filters) == ["status", "tenant"]
    assert issubclass(both, AssetFilterSet)
    assert both.__name__ == AssetFilterSet.__name__
    # The class itself keeps them all: the OpenAPI schema reads its parameters there.
    assert set(AssetFilterSet.base_filters) >= {"status", "tenant", "workflow_managed"}
    assert narrowed(AssetFilterSet, frozenset(AssetFilterSet.base_filters)) is AssetFilterSet


def test_a_filterset_that_binds_its_own_way_is_built_whole():
    # LegalHoldFilterSet labels one of its filters in __init__, named or not.
    assert narrowed(LegalHoldFilterSet, frozenset({"tenant__slug"})) is LegalHoldFilterSet
    query = QueryDict("tenant__slug=alpha&released_at__isnull=")
    assert named_filters(LegalHoldFilterSet, query) == {"tenant__slug", "released_at__isnull"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    [
        "status=approved",
        "status=approved&tenant=alpha",
        "status=approved&tenant=bravo",
        "workflow_managed=true",
        "workflow_managed=false&status=requested",
        "delegation_failed=true",
        "workflow_instance_id=00000000-0000-0000-0000-000000000001",
        "workflow_instance_id=00000000-0000-0000-0000-000000000000&status=requested",
        "tenant=",
        "status=bogus",
        "workflow_managed=maybe&status=approved",
        "workflow_instance_id=not-a-uuid",
    ],
)
def test_named_filters_alone_give_the_rows_and_errors_of_the_whole_filterset(
    query, tenant_a, tenant_b
):
    statuses = [Asset.Status.DRAFT, Asset.Status.REQUESTED, Asset.Status.APPROVED]
    for tenant in (tenant_a, tenant_b):
        for n in range(6):
            asset = assets.asset_create(
                actor=SYSTEM_ACTOR, tenant=tenant, name=f"{tenant.slug} {n}"
            )
            with tenant_scope(tenant):
                Asset.objects.filter(pk=asset.pk).update(
                    status=statuses[n % 3],
                    workflow_instance_id=uuid.UUID(int=n % 2) if n % 3 == 1 else None,
                )
    with system_scope():
        _narrowed_as_whole(AssetFilterSet, query, Asset.objects.order_by("pk"))


def _narrowed_as_whole(filterset_class, query: str, queryset) -> None:
    """The backend narrows `filterset_class` for `query`, and answers what the whole
    FilterSet does: its rows, or its errors as the same ValidationError."""
    names = named_filters(filterset_class, QueryDict(query))
    assert narrowed(filterset_class, names) is not filterset_class

    listing = type("Listing", (), {"filterset_class": filterset_class})()
    whole = filterset_class(QueryDict(query), queryset=queryset)
    request = Request(RequestFactory().get(f"/x?{query}"))
    try:
        rows = list(FilterBackend().filter_queryset(request, queryset, listing))
    except ValidationError as exc:
        assert not whole.is_valid()
        assert exc.detail == translate_validation(whole.errors).detail
    else:
        assert whole.is_valid()
        assert rows == list(whole.qs)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    [
        "status=active",
        "flagged=true",
        "flagged=false&status=provisioned",
        "store=nowhere",
        "status=bogus",
        "flagged=maybe",
    ],
)
def test_the_api_base_filtersets_are_narrowed_alike(query, tenant_a, store, profile):
    """The stores' FilterSets use django-filter's REST base (its `form` adds a crispy
    helper, nothing else): narrowed too, with the rows and errors of the whole."""
    live_binding(tenant_a, store, profile)
    with system_scope():
        _narrowed_as_whole(StoreBindingFilterSet, query, StoreBinding.objects.order_by("pk"))
