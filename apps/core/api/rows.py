"""List pages built from the selector's rows (`.values()`), not from model instances.

A list of fifty objects through a ModelSerializer builds fifty model instances (and
fifty related ones) and walks each field's machinery for each: on the load case's
lists that was about half of a request's CPU. `RowShape` reads a read-only
serializer's declared fields once, and turns each into a plain conversion of a
`.values()` row, with DRF's own representation (UUIDs as strings, datetimes in ISO
8601 with `Z` for UTC, relations by their slug). A field it does not know raises at
start-up rather than being answered differently, and tests hold every fast list to
its serializer over generated rows (tests/<app>/test_api_rows.py).

`RowListMixin` serves a viewset's `list` from the rows, with the same filters,
search, ordering and cursor pagination as before; everything else the viewset does
(retrieve, ETags, writes) still goes through the serializer.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, timedelta

from django.utils import timezone
from rest_framework import ISO_8601, serializers
from rest_framework.response import Response
from rest_framework.settings import api_settings

from apps.core.api.renderers import datetimes_in_utc


def _datetime(value, zone):
    # DRF's DateTimeField: in the current time zone, ISO 8601, UTC written as Z.
    text = value.astimezone(zone).isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


_NO_OFFSET = timedelta(0)
_UTC_NAMES = frozenset({"UTC", "Etc/UTC"})


def _is_utc(zone) -> bool:
    return zone is UTC or getattr(zone, "key", None) in _UTC_NAMES


def _date(value):
    return value.isoformat()


def _same(value):
    return value


# Checked in order: the first class a field is an instance of decides. ChoiceField
# answers the stored value of a valid choice, which is the value itself.
# A UUID is left as it is: every renderer writes it as DRF's field does (`str()`).
_CONVERSIONS: tuple[tuple[type, Callable], ...] = (
    (serializers.UUIDField, _same),
    (serializers.DateTimeField, _datetime),
    (serializers.DateField, _date),
    (serializers.BooleanField, bool),
    (serializers.IntegerField, int),
    (serializers.ChoiceField, _same),
    (serializers.CharField, str),
    (serializers.JSONField, _same),
    (serializers.SlugRelatedField, _same),
)


def _as_drf_does(field) -> bool:
    """False for the options that change a field's representation from the default."""
    if isinstance(field, serializers.UUIDField):
        return field.uuid_format == "hex_verbose"
    if isinstance(field, serializers.DateTimeField | serializers.DateField):
        default = (
            api_settings.DATETIME_FORMAT
            if isinstance(field, serializers.DateTimeField)
            else api_settings.DATE_FORMAT
        )
        chosen = getattr(field, "format", default)
        return str(chosen).lower() == ISO_8601 and getattr(field, "timezone", None) is None
    return True


def _conversion(field) -> Callable:
    for kind, convert in _CONVERSIONS:
        if isinstance(field, kind):
            if not _as_drf_does(field):
                break
            return convert
    raise TypeError(f"RowShape cannot represent {type(field).__name__} {field.field_name!r}")


class RowShape:
    """A serializer's representation, from `.values()` rows.

    `computed` gives the fields that are properties of the model rather than columns
    (a function of the row); `extra` names columns the functions read."""

    def __init__(
        self,
        serializer_class: type[serializers.Serializer],
        *,
        computed: dict[str, Callable[[dict], object]] | None = None,
        extra: tuple[str, ...] = (),
    ):
        computed = computed or {}
        self.columns: dict[str, str] = {}  # output name -> values() lookup
        self._plan: list[tuple[str, str | None, Callable]] = []
        for name, field in serializer_class().fields.items():
            if name in computed:
                self._plan.append((name, None, computed[name]))
                continue
            if isinstance(field, serializers.SlugRelatedField):
                lookup = f"{field.source}__{field.slug_field}"
            elif "." in field.source or field.source == "*":
                raise TypeError(f"RowShape cannot follow the source of {name!r}")
            else:
                lookup = field.source
            self.columns[name] = lookup
            self._plan.append((name, lookup, _conversion(field)))
        self.extra = extra

    def lookups(self, *also: str) -> list[str]:
        """What `.values()` is given: each column once, plus `also` (ordering fields)."""
        seen = dict.fromkeys([*self.columns.values(), *self.extra, *also])
        return list(seen)

    def represent(self, row: dict, zone=None) -> dict:
        """One row as the serializer's answer renders it; `zone` is the current time
        zone (looked up once per page by represent_all: the look-up costs more than the
        conversion). With the zone UTC, a datetime in UTC is left as it is, for the
        renderer to write (apps.core.api.renderers.datetimes_in_utc); a UUID always is."""
        zone = zone or timezone.get_current_timezone()
        return self._represent(row, zone, _is_utc(zone))

    def _represent(self, row: dict, zone, utc: bool) -> dict:
        out = {}
        for name, lookup, convert in self._plan:
            if lookup is None:
                out[name] = convert(row)
                continue
            value = row[lookup]
            if value is None:
                out[name] = None
            elif convert is _datetime:
                keep = utc and value.utcoffset() == _NO_OFFSET
                out[name] = value if keep else _datetime(value, zone)
            else:
                out[name] = convert(value)
        return out

    def represent_all(self, rows) -> list[dict]:
        zone = timezone.get_current_timezone()
        utc = _is_utc(zone)
        return [self._represent(row, zone, utc) for row in rows]


# `list` from the selector's rows, shaped by `row_shape` (a RowShape of the viewset's
# read serializer); filtering, search, ordering and the cursor are the viewset's own.
# The cursor reads its position from the row, so the ordering fields are fetched too.
# (A comment, not a docstring: the OpenAPI schema would take a docstring as the
# description of every operation of a viewset that has none of its own.)
class RowListMixin:
    row_shape: RowShape

    def list(self, request, *args, **kwargs):
        ordering = [self.ordering] if isinstance(self.ordering, str) else list(self.ordering)
        orderable = [name.lstrip("-") for name in [*ordering, *self.ordering_fields]]
        queryset = self.filter_queryset(self.get_queryset())
        rows = queryset.values(*self.row_shape.lookups("pk", *orderable))
        page = self.paginate_queryset(rows)
        if page is None:
            return datetimes_in_utc(Response(self.row_shape.represent_all(rows)))
        return datetimes_in_utc(self.get_paginated_response(self.row_shape.represent_all(page)))
