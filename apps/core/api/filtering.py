"""The API's FilterSet backend: django-filter's, with only the filters the request names.

django-filter builds a FilterSet for every list request: a deep copy of each filter, a
form class made anew with a field for each, the form bound and validated. A filter the
request does not name can change nothing (its value is empty, an empty value applies no
filter and is always valid, and unknown parameters are ignored either way), yet copying
and validating every filter was a sixth of an API list's time with no filter named, and
most of what a filtered list cost more than an unfiltered one. So a request that names
none builds no FilterSet, and one that names some builds a FilterSet of those alone.

Even a FilterSet of one filter made a form class for every request (a class with a
field made anew for each filter), then a form deep-copying those fields, then bound
fields to clean them: twice what filtering the queryset itself costs. A field made from
a filter's own arguments (not from the request: `ModelChoiceFilter` may make its
queryset from it) is the same for every request, so the backend cleans each value with
fields made once per process, as the form would (widget, then field), and builds the
form only when a value is refused: the form's errors are the 400's, word for word.
"""

from __future__ import annotations

import copy
from functools import lru_cache

import django_filters
import django_filters.rest_framework
from django import forms
from django.core.exceptions import ValidationError
from django.utils.datastructures import MultiValueDict
from django_filters import utils
from django_filters.filters import Filter
from django_filters.rest_framework import DjangoFilterBackend


class _Reads(dict):
    """Query data that remembers which parameters a widget looked for."""

    def __init__(self):
        super().__init__()
        self.asked: set[str] = set()

    def get(self, key, default=None):
        self.asked.add(key)
        return default

    def getlist(self, key, default=None):
        self.asked.add(key)
        return [] if default is None else default

    def __contains__(self, key):
        self.asked.add(key)
        return False


_parameters: dict[type, dict[str, frozenset[str]]] = {}


def _parameters_of(filterset_class) -> dict[str, frozenset[str]]:
    """Each filter's query parameters: what its widget looks for in the query (its name,
    or each part of a range: `<name>_min`, `<name>_after`)."""
    known = _parameters.get(filterset_class)
    if known is None:
        known = {}
        for name, declared in filterset_class.base_filters.items():
            reads = _Reads()
            # A copy: a filter keeps the form field it makes, and every FilterSet
            # deep-copies its class's filters, a made field and widget with them.
            copy.deepcopy(declared).field.widget.value_from_datadict(reads, {}, name)
            known[name] = frozenset(reads.asked)
        _parameters[filterset_class] = known
    return known


def filter_parameters(filterset_class) -> frozenset[str]:
    """The query parameters a FilterSet reads, all its filters' together."""
    return frozenset().union(*_parameters_of(filterset_class).values())


def named_filters(filterset_class, query) -> frozenset[str]:
    """The filters one of whose parameters the query holds."""
    return frozenset(
        name
        for name, parameters in _parameters_of(filterset_class).items()
        if not parameters.isdisjoint(query)
    )


# A FilterSet that changes how its filters are bound, validated or applied may read a
# filter the request did not name (LegalHoldFilterSet labels one in __init__), and a form
# of its own may validate several fields together: those are built whole. The two stock
# bases differ only in the REST one's `form`, which adds a crispy-forms helper.
_MACHINERY = ("__init__", "form", "get_form_class", "is_valid", "errors", "filter_queryset", "qs")
_STOCK = (django_filters.FilterSet, django_filters.rest_framework.FilterSet)


def _narrowable(filterset_class) -> bool:
    return filterset_class._meta.form is forms.Form and all(
        any(getattr(filterset_class, name) is getattr(stock, name) for stock in _STOCK)
        for name in _MACHINERY
    )


@lru_cache(maxsize=512)
def narrowed(filterset_class, names: frozenset[str]):
    """The FilterSet class with only the filters `names`, in their declared order: made
    once per process for each set of filters asked for together."""
    if not _narrowable(filterset_class) or names >= filterset_class.base_filters.keys():
        return filterset_class
    subclass = type(
        filterset_class.__name__,
        (filterset_class,),
        {"__module__": filterset_class.__module__, "__qualname__": filterset_class.__qualname__},
    )
    subclass.base_filters = {
        name: declared for name, declared in filterset_class.base_filters.items() if name in names
    }
    return subclass


_NO_FILES = MultiValueDict()
_fields: dict[type, dict[str, forms.Field] | None] = {}


def _shared_fields(filterset) -> dict[str, forms.Field] | None:
    """The form fields of the FilterSet's class, made once: None when a filter makes its
    field its own way (from the request, say) or a field is disabled (the form would
    clean its initial value instead)."""
    filterset_class = type(filterset)
    if filterset_class not in _fields:
        shared = None
        if _narrowable(filterset_class) and all(
            type(declared).field is Filter.field for declared in filterset.filters.values()
        ):
            shared = filterset.get_form_class().base_fields
            if any(field.disabled for field in shared.values()):
                shared = None
        _fields[filterset_class] = shared
    return _fields[filterset_class]


def _cleaned(filterset, fields: dict[str, forms.Field]) -> dict | None:
    """The form's cleaned_data, as its _clean_fields makes it (the stock form has no
    clean_<name> methods and its clean() keeps the data); None if a value is refused."""
    cleaned = {}
    for name, field in fields.items():
        try:
            cleaned[name] = field.clean(
                field.widget.value_from_datadict(filterset.data, _NO_FILES, name)
            )
        except ValidationError:
            return None
    return cleaned


class FilterBackend(DjangoFilterBackend):
    def filter_queryset(self, request, queryset, view):
        filterset_class = self.get_filterset_class(view, queryset)
        if filterset_class is None:
            return queryset
        names = named_filters(filterset_class, request.query_params)
        if not names:
            return queryset
        filterset = narrowed(filterset_class, names)(
            **self.get_filterset_kwargs(request, queryset, view)
        )
        fields = _shared_fields(filterset) if filterset.form_prefix is None else None
        cleaned = None if fields is None else _cleaned(filterset, fields)
        if cleaned is None:
            if not filterset.is_valid() and self.raise_exception:
                raise utils.translate_validation(filterset.errors)
            return filterset.qs
        # FilterSet.qs and filter_queryset, which _narrowable holds to be the stock ones.
        filtered = filterset.queryset.all()
        for name, value in cleaned.items():
            filtered = filterset.filters[name].filter(filtered, value)
        return filtered
