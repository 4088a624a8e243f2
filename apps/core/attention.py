"""What waits on a person, as every app declares it: the kinds of the attention queue.

Each app with something that can wait on an operator lists its kinds in its
`attention.py` (`KINDS`, apps.core.hooks): what the items are (read through the app's
selectors), and the actions that resolve one (each a call of the app's services, which
audit it and refuse with a stable code). apps.attention collects them into one queue:
the console page, `/api/v1/attention/`, the dashboard count, a gauge per kind and an
event when an item enters the queue.

An item is keyed within its kind by a string (usually the row's id). A kind answers for
the items *now*; the queue remembers when each entered and left.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime

from django.core.exceptions import ImproperlyConfigured
from django.core.exceptions import ValidationError as DjangoValidationError
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from apps.core.codes import CoreCode
from apps.core.errors import NotFound, ValidationFailed
from apps.core.hooks import app_modules
from apps.core.scope import system_scope


@dataclass(frozen=True)
class Input:
    """One value an action asks of the person (a form field, a JSON member)."""

    name: str
    label: str
    required: bool = True
    kind: str = "text"  # text | textarea | datetime | choice
    choices: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Action:
    name: str  # stable: the API's path segment
    label: str
    inputs: tuple[Input, ...] = ()
    # A page to go to instead of a form, when the resolution is made elsewhere (a
    # subscription to create): the action names where, and the queue links to it.
    link_only: bool = False
    # A destructive action: what it will do, said beside its real button; the console
    # asks for it (apps.console.confirm) before acting.
    confirm: str = ""

    def clean(self, data) -> dict:
        """The action's inputs from a form or a JSON body; a required one missing is
        refused with `<name>_required` (400), before anything changes."""
        values = {}
        for spec in self.inputs:
            value = data.get(spec.name, "") if hasattr(data, "get") else ""
            value = value.strip() if isinstance(value, str) else value
            if spec.required and value in ("", None):
                raise ValidationFailed(
                    f"{spec.label} is required.", code=f"{spec.name}_required", field=spec.name
                )
            if spec.kind == "datetime":
                value = _moment(value)  # None when unreadable: the service refuses it
            if spec.kind == "choice" and value and value not in dict(spec.choices):
                raise ValidationFailed(
                    f"{spec.label} is one of {', '.join(dict(spec.choices))}.",
                    code=CoreCode.INVALID,
                    field=spec.name,
                )
            values[spec.name] = value
        return values


@dataclass(frozen=True)
class Item:
    key: str
    title: str
    waiting_for: str  # what would unblock it, said to the person
    # When the thing began to wait; None when the kind cannot tell, and the queue says
    # since when it has known instead.
    since: datetime | None
    tenant_id: object = None
    tenant: str = ""  # the tenant's slug, for display
    url: str = ""  # the console page of the thing itself
    facts: tuple[tuple[str, str], ...] = field(default_factory=tuple)  # (label, value)


class Kind:
    """One kind of item. Most kinds are rows of one table that wait: they name the
    rows (`waiting()`, a queryset read in the system scope), how each reads as an item
    (`item(row)`) and how an action resolves one (`resolve()`); a kind that is not a
    table's rows overrides items(), count() and act() instead."""

    slug: str = ""
    title: str = ""
    description: str = ""  # why such an item waits on a person
    actions: tuple[Action, ...] = ()

    def waiting(self):
        raise NotImplementedError

    def item(self, row) -> Item:
        raise NotImplementedError

    def resolve(self, *, actor, row, action: str, values: dict) -> str:
        raise NotImplementedError

    def items(self) -> list[Item]:
        with system_scope():
            return [self.item(row) for row in self.waiting()]

    def count(self) -> int:
        with system_scope():
            return self.waiting().count()

    def act(self, *, actor, key: str, action: str, values: dict) -> str:
        """Resolve item `key` by `action`, through the app's services; the sentence
        the person is told. Refusals raise the services' errors."""
        with system_scope():
            row = waiting_row(self.waiting(), key)
        return self.resolve(actor=actor, row=row, action=action, values=values)

    def action(self, name: str) -> Action | None:
        return next((a for a in self.actions if a.name == name), None)


def _moment(value):
    """A datetime input, read as UTC when it names no zone (the console's local form)."""
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = parse_datetime(str(value or ""))
        except ValueError:
            moment = None
    if moment is not None and timezone.is_naive(moment):
        moment = timezone.make_aware(moment, UTC)
    return moment


def find_row(queryset, key: str):
    """The row of `queryset` whose primary key `key` names, or None (a key of the wrong
    shape included)."""
    try:
        pk = queryset.model._meta.pk.to_python(key)
    except DjangoValidationError:
        return None
    return queryset.filter(pk=pk).first() if pk is not None else None


def waiting_row(queryset, key: str):
    """The row `key` names among those `queryset` says are waiting (the caller's scope);
    a key of the wrong shape, or a row that no longer waits, is `not_in_queue` (404)."""
    row = find_row(queryset, key)
    if row is None:
        raise NotFound(
            "That item is not waiting in the attention queue.", code=CoreCode.NOT_IN_QUEUE
        )
    return row


@functools.cache
def kinds() -> dict[str, Kind]:
    """Every installed app's kinds, by slug, in INSTALLED_APPS order. A slug two apps
    declare is refused: which one would the queue act on?"""
    found: dict[str, Kind] = {}
    for module in app_modules("attention"):
        for kind in getattr(module, "KINDS", ()):
            if kind.slug in found:
                raise ImproperlyConfigured(f"{module.__name__} declares {kind.slug!r} again.")
            found[kind.slug] = kind
    return found
