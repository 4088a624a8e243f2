"""The console's one search box: an identifier, an exact name or the start of a name,
across every app.

The console shell may not import the domains, so each app that has something findable
contributes `find(query, request) -> list[Match]` in its `search.py` (apps.core.hooks),
reading through its own selectors. The search runs in the request's scope: row-level
security decides what it finds, exactly as in the lists, and an object of another
tenant is answered as one that does not exist.

Every lookup is served by an index, whatever the number of rows: an equality, or a
name's start in any case (an asset's, through a pattern index on its upper-cased name,
read up to the few matches shown), exact matches listed first. The query is parsed
once here, and an app asks only the columns of the query's shape (a UUID only UUID
columns, a number only integer keys, a name only name columns).

A list's own search box (`searched`, apps.console.listing) is a pattern over the rows
the list's filters leave, ranked the same way.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from django.db.models import Case, Q, Value, When

from apps.core.hooks import app_modules

MAX_LENGTH = 255
FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")
# Below PostgreSQL's bigint limit, so a long number is no lookup rather than an error.
MAX_NUMBER = 2**63 - 1


@dataclass(frozen=True)
class Match:
    """One object found: what kind of thing it is, its name, and its console page (empty
    when it has none to open, such as a receipt whose asset was deleted)."""

    kind: str
    title: str
    url: str
    detail: str = ""


@dataclass(frozen=True)
class Query:
    """The text asked for, and the shapes it has; a shape it lacks is None."""

    text: str
    uuid: uuid.UUID | None = None
    number: int | None = None
    name: str | None = None
    fingerprint: str | None = None

    @classmethod
    def parse(cls, raw: str | None) -> Query:
        text = (raw or "").strip()
        if not text or len(text) > MAX_LENGTH or "\x00" in text:
            return cls(text="")
        try:
            as_uuid = uuid.UUID(text)
        except ValueError:
            as_uuid = None
        else:
            return cls(text=text, uuid=as_uuid)
        number = int(text) if text.isascii() and text.isdigit() else None
        if number is not None and number > MAX_NUMBER:
            number = None
        lowered = text.lower()
        return cls(
            text=text,
            number=number,
            # An exact name is compared by equality, so any printable text is safe to ask.
            name=text if text.isprintable() else None,
            fingerprint=lowered if FINGERPRINT.match(lowered) else None,
        )

    @property
    def empty(self) -> bool:
        return not (self.uuid or self.number is not None or self.name or self.fingerprint)


def searched(queryset, fields, text: str):
    """The rows one of whose `fields` holds `text`, any case, annotated (as an alias)
    `search_rank`: 0 where a field is the text, 1 where one starts with it, 2 where
    one only holds it, so that ordering by the rank lists exact matches first.

    A list's search box: a pattern over the list's rows, as the lists always searched,
    now ranked."""
    holds, rank = Q(), []
    for field in fields:
        holds |= Q(**{f"{field}__icontains": text})
    rank += [When(Q(**{f"{field}__iexact": text}), then=Value(0)) for field in fields]
    rank += [When(Q(**{f"{field}__istartswith": text}), then=Value(1)) for field in fields]
    return queryset.filter(holds).alias(search_rank=Case(*rank, default=Value(2)))


def search(raw: str | None, request) -> tuple[Query, list[Match]]:
    """Every app's matches for the text, in INSTALLED_APPS order."""
    query = Query.parse(raw)
    if query.empty:
        return query, []
    return query, [match for module in _finders() for match in module.find(query, request)]


def _finders():
    # Steward's domain apps only: django.contrib.postgres has a `search` module of its
    # own, and this module is core's.
    return [
        module
        for module in app_modules("search")
        if module.__name__.startswith("apps.") and module.__name__ != __name__
    ]
