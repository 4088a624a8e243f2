"""The API's filter backend (apps.core.api.filtering) skips the FilterSet only when the
request names none of its parameters: the parameters are exactly those its widgets read,
ranges included, and the rows are the same either way; the values of a valid query are
cleaned by fields made once, with the rows and errors of the whole FilterSet."""

import random
import uuid
from urllib.parse import urlencode

import django_filters
import pytest
from django import forms
from django.http import QueryDict
from django.test import RequestFactory
from django_filters.utils import translate_validation
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request

from apps.assets import services as assets
from apps.assets.filters import AssetFilterSet
from apps.assets.models import Asset
from apps.core.api import filtering
from apps.core.api.filtering import (
    FilterBackend,
    _shared_fields,
    filter_parameters,
    named_filters,
    narrowed,
)
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from apps.governance.retention.filters import LegalHoldFilterSet
from apps.stores.filters import StoreBindingFilterSet
from apps.stores.models import StoreBinding
from apps.tenancy.models import Tenant
from tests.governance.factories import live_binding


@pytest.fixture(autouse=True)
def _fresh_narrowed_classes():
    # A class judged while a test had patched it must not be remembered for the next.
    narrowed.cache_clear()
    filtering._fields.clear()
    yield
    narrowed.cache_clear()
    filtering._fields.clear()


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
    _assets_of_every_kind(tenant_a, tenant_b)
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


# ------------------------------------------------- values cleaned by fields made once


def _assets_of_every_kind(*tenants) -> None:
    statuses = [Asset.Status.DRAFT, Asset.Status.REQUESTED, Asset.Status.APPROVED]
    # One live link per workflow instance (asset_one_live_link_per_instance): each
    # tenant's instances are its own.
    for t, tenant in enumerate(tenants):
        for n in range(6):
            asset = assets.asset_create(
                actor=SYSTEM_ACTOR, tenant=tenant, name=f"{tenant.slug} {n}"
            )
            with tenant_scope(tenant):
                Asset.objects.filter(pk=asset.pk).update(
                    status=statuses[n % 3],
                    workflow_instance_id=uuid.UUID(int=n % 2 + 2 * t) if n % 3 == 1 else None,
                    workflow_link_stale=n == 4,
                    delegation_failure="refused" if n == 1 else "",
                )


# Each parameter's values: what a widget accepts, what it refuses, and the spellings in
# between (a NullBooleanSelect reads "1", "on" and "True"; a UUID field strips spaces).
_VALUES = {
    "status": ["", "approved", "requested", "draft", "retired", "Approved", "bogus", " draft"],
    "workflow_managed": ["", "true", "false", "True", "False", "1", "0", "2", "on", "maybe"],
    "delegation_failed": ["", "true", "false", "unknown", "3"],
    "tenant": ["", "alpha", "bravo", "nobody", "ALPHA"],
    "workflow_instance_id": [
        "",
        "00000000-0000-0000-0000-000000000001",
        "00000000000000000000000000000000",
        " 00000000-0000-0000-0000-000000000001 ",
        "not-a-uuid",
        "{00000000-0000-0000-0000-000000000000}",
    ],
    "cursor": ["abc"],
}


def _generated_queries(count: int, seed: int = 21) -> list[str]:
    chosen = random.Random(seed)
    queries = []
    for _ in range(count):
        names = chosen.sample(sorted(_VALUES), chosen.randint(1, 4))
        pairs = [(name, chosen.choice(_VALUES[name])) for name in names]
        if chosen.random() < 0.1:  # a parameter given twice: widgets read the last
            pairs.append((pairs[0][0], chosen.choice(_VALUES[pairs[0][0]])))
        queries.append(urlencode(pairs))
    return queries


def _counting_forms(monkeypatch) -> list:
    """Every form bound from now on (patched on Django's form, not on the FilterSet:
    a FilterSet whose machinery is patched is no longer narrowed)."""
    made = []
    original = forms.BaseForm.__init__

    def counted(self, *args, **kwargs):
        made.append(type(self))
        original(self, *args, **kwargs)

    monkeypatch.setattr(forms.BaseForm, "__init__", counted)
    return made


@pytest.mark.django_db
def test_generated_queries_give_the_rows_and_errors_of_the_whole_filterset(
    tenant_a, tenant_b, monkeypatch
):
    _assets_of_every_kind(tenant_a, tenant_b)
    forms_made = _counting_forms(monkeypatch)
    refused = answered = 0
    with system_scope():
        queryset = Asset.objects.order_by("pk")
        for query in _generated_queries(300):
            whole = AssetFilterSet(QueryDict(query), queryset=queryset)
            valid = whole.is_valid()
            del forms_made[:]
            request = Request(RequestFactory().get(f"/x?{query}"))
            try:
                rows = list(FilterBackend().filter_queryset(request, queryset, View()))
            except ValidationError as exc:
                assert not valid, query
                assert exc.detail == translate_validation(whole.errors).detail, query
                assert forms_made, query  # the errors are the form's own
                refused += 1
            else:
                assert valid, query
                assert rows == list(whole.qs), query
                # Named filters are cleaned by the fields alone; none named, no FilterSet.
                assert not forms_made, query
                answered += 1
    assert refused > 30 and answered > 100


@pytest.mark.django_db
def test_a_valid_query_binds_no_form(tenant_a, monkeypatch):
    _assets_of_every_kind(tenant_a)
    forms_made = _counting_forms(monkeypatch)
    with system_scope():
        queryset = Asset.objects.order_by("pk")
        rows = list(_filter("workflow_managed=false&status=approved", queryset))
        expected = list(queryset.filter(status=Asset.Status.APPROVED))
        assert not forms_made
        with pytest.raises(ValidationError):
            _filter("workflow_managed=false&status=bogus", queryset)
        assert forms_made
    assert rows == expected and len(expected) == 2


class ByTenant(django_filters.FilterSet):
    """A filter whose field is made from the request (its queryset a function of it)."""

    tenant = django_filters.ModelChoiceFilter(
        field_name="tenant", to_field_name="slug", queryset=lambda request: Tenant.objects.all()
    )
    name = django_filters.CharFilter(disabled=True)

    class Meta:
        model = Asset
        fields = ["status"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query", ["tenant=alpha", "tenant=alpha&status=draft", "name=alpha 1", "tenant=nobody"]
)
def test_fields_made_from_the_request_or_disabled_are_made_by_the_form(query, tenant_a):
    _assets_of_every_kind(tenant_a)
    with system_scope():
        queryset = Asset.objects.order_by("pk")
        _narrowed_as_whole(ByTenant, query, queryset)
        narrowed_class = narrowed(ByTenant, named_filters(ByTenant, QueryDict(query)))
        assert _shared_fields(narrowed_class(QueryDict(query), queryset=queryset)) is None
        status_only = narrowed(ByTenant, frozenset({"status"}))
        assert _shared_fields(status_only(QueryDict("status=draft"), queryset=queryset))
