"""A list page's rows read as `.values()`, written as the model's instances would write
them.

Building fifty model instances, and fifty more for their tenants, was half the Python a
console list page spent on its rows: each instance runs `Model.__init__`, its signals
and its field descriptors for values the page writes once. A `ValueRow` holds the
fetched values and nothing else. An attribute that is one of them is read from the
dict; any other is the model's own (a property such as `Asset.is_workflow_managed`, a
method such as `get_absolute_url` or `get_status_display`, a class constant), run on
the row, so the page shows what the model says and no rule is written twice. A field
the page did not fetch raises AttributeError rather than querying once per row (the
cell then reads blank, as `attr` reads a missing attribute), so each page that reads
its rows this way has a parity test against its model instances
(tests/console/test_list_rows.py).
"""

from __future__ import annotations

import functools
import inspect

from django.db import models
from django.utils.encoding import force_str
from django.utils.hashable import make_hashable

_NOT_FETCHED = object()


class ValueRow:
    """One row of a model, from a `.values()` dict. Its values are its attributes;
    anything else is looked up on the model (once per model and name) and run on the
    row. Built by `value_rows`, which makes one subclass per model."""

    model: type[models.Model]
    # name -> what the model has under it: a property to run on the row, or _NOT_FETCHED
    _found: dict[str, object]

    def __getattr__(self, name: str):
        # Reached only for a name that is neither a fetched value nor installed yet.
        cls = type(self)
        how = cls._found.get(name)
        if how is None:
            how = _resolve(cls.model, name)
            if how is not _NOT_FETCHED and not isinstance(how, property):
                # Methods and constants read as on the model from now on, at an
                # attribute's cost: they are not data descriptors, so a fetched value
                # of the same name would still win.
                setattr(cls, name, how)
                return getattr(self, name)
            cls._found[name] = how
        if how is _NOT_FETCHED:
            raise AttributeError(f"{cls.model.__name__}.{name} was not fetched for this list")
        return how.__get__(self, cls.model)

    def __setattr__(self, name, value):
        raise AttributeError("a list row is read-only")

    def __repr__(self) -> str:
        return f"<{type(self).model.__name__} row {self.__dict__!r}>"


_row_classes: dict[type, type[ValueRow]] = {}


def _row_class(model: type[models.Model]) -> type[ValueRow]:
    cls = _row_classes.get(model)
    if cls is None:
        cls = _row_classes[model] = type(
            f"{model.__name__}Row", (ValueRow,), {"model": model, "_found": {}}
        )
    return cls


def _resolve(model: type[models.Model], name: str):
    fields = {f.name for f in model._meta.get_fields()} | {
        f.attname for f in model._meta.concrete_fields
    }
    if name in fields:
        return _NOT_FETCHED
    try:
        found = inspect.getattr_static(model, name)
    except AttributeError:
        return _NOT_FETCHED
    # Field descriptors of reverse relations and the like would query: not fetched.
    if type(found).__module__.startswith("django.db.models.fields"):
        return _NOT_FETCHED
    if isinstance(found, functools.partialmethod) and found.func is _FIELD_DISPLAY:
        return _display(found.keywords["field"]) or found
    return found


_FIELD_DISPLAY = models.Model._get_FIELD_display


def _display(field):
    """`get_FOO_display` as Django writes it (`Model._get_FIELD_display`), with the
    field's choices made a dict once: Django makes them again on every call, 6 µs of
    each status cell. None for choices given as a callable, which Django evaluates on
    each call."""
    if not isinstance(field.choices, (list, tuple)):
        return None
    choices, attname = dict(make_hashable(field.flatchoices)), field.attname

    def display(row):
        value = getattr(row, attname)
        return force_str(choices.get(make_hashable(value), value), strings_only=True)

    display.__name__ = f"get_{field.name}_display"
    return display


def _rows(model: type[models.Model], dicts: list[dict]) -> list[ValueRow]:
    cls = _row_class(model)
    keys = dicts[0].keys() if dicts else ()
    # `tenant__slug` is the related row's `slug`: one nested row per relation, None
    # where its foreign key is null (its own column says so when fetched, otherwise
    # every fetched value of the related row is null), as an instance reads it.
    related: dict[str, list[str]] = {}
    for key in keys:
        name, sep, rest = key.partition("__")
        if sep:
            related.setdefault(name, []).append(rest)
    nested = {
        name: (model._meta.get_field(name).related_model, parts) for name, parts in related.items()
    }
    rows = []
    for values in dicts:
        row = object.__new__(cls)
        if nested:
            values = dict(values)
            for name, (other, parts) in nested.items():
                inner = {part: values.pop(f"{name}__{part}") for part in parts}
                key = f"{name}_id"
                null = (
                    values[key] is None
                    if key in values
                    else not any(v is not None for v in inner.values())
                )
                values[name] = None if null else _rows(other, [inner])[0]
        row.__dict__.update(values)
        rows.append(row)
    return rows


def value_rows(model: type[models.Model], dicts) -> list[ValueRow]:
    """Rows of `model` from `.values()` dicts (related values as `tenant__slug`)."""
    return _rows(model, list(dicts))
