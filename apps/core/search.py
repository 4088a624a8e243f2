"""The console's one search box: an identifier, or a name (exact, its start, or one like
it), across every app.

The console shell may not import the domains, so each app that has something findable
contributes `find(query, request) -> list[Match]` in its `search.py` (apps.core.hooks),
reading through its own selectors. The search runs in the request's scope: row-level
security decides what it finds, exactly as in the lists, and an object of another
tenant is answered as one that does not exist.

Every lookup is served by an index, whatever the number of rows: an equality, or a
name (`named`): exact, then its start in any case, then names like it by trigram
similarity (pg_trgm), each read up to the few matches shown. The query is parsed once
here, and an app asks only the columns of the query's shape (a UUID only UUID columns,
a number only integer keys, a name only name columns).

A list's own search box (`searched`, apps.console.listing) is a pattern over the rows
the list's filters leave, ranked the same way.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from django.contrib.postgres.indexes import GistIndex
from django.contrib.postgres.search import TrigramDistance
from django.db.models import Case, F, Index, Q, Value, When
from django.db.models.functions import Collate, Upper

from apps.core.hooks import app_modules

MAX_LENGTH = 255
FINGERPRINT = re.compile(r"^[0-9a-f]{64}$")
# Below PostgreSQL's bigint limit, so a long number is no lookup rather than an error.
MAX_NUMBER = 2**63 - 1
# How alike two names must be to be offered (pg_trgm's similarity: shared trigrams over
# all trigrams of both): pg_trgm's own default threshold. "acne ledger" is 0.6 like
# "Acme ledger"; "acm" is 0.22 like "Acme ledger" (that one is found by its start).
SIMILARITY = 0.3


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


def named(queryset, name: str, *, field: str = "name", folded: str | None = None, shown: int):
    """Up to `shown` rows of `queryset` whose `field` is `name`, then those whose `field`
    starts with it in any case (in order); when there are none, those most like it (best
    first, at least SIMILARITY alike) among the names that start with its first
    character, in any case. At most three statements, each an index's range or ordered
    scan.

    Likeness keeps the first character, as Lucene's and Elasticsearch's fuzzy queries do
    with a `prefix_length` of 1: a typo is found anywhere but there ("kiet" finds "kite",
    "ikte" does not). The price of every typo is paid by the names the scan reads, and
    on a million names pg_trgm's trigram index prunes almost nothing (docs/performance.md,
    search): fixing the first character lets the scan read only the names that share it.

    `folded` names the upper-cased, C-collated copy of `field` that a btree index orders
    (a generated column); without one the expression is used, which an expression index
    on `Collate(Upper(field), "C")` serves (`name_indexes`). A table under row-level
    security with many rows keeps the generated column, as assets do: `upper()` is not
    leakproof, so the expression's index is not used below the policy. The likeness is
    then served by a GiST index over the folded column and `field` (btree_gist and
    gist_trgm_ops): under row-level security no index may test a non-leakproof operator
    such as pg_trgm's `%` before the policy has, but the folded column's range is
    leakproof, and an index may order rows by `<->` while the policy filters them, so the
    scan reads the one first character's names and stops after `shown` visible rows; the
    threshold is applied to those few here.
    """
    found = list(queryset.filter(**{field: name})[:shown])
    queryset, folded = _with_folded(queryset, field, folded)
    start = name.upper()
    starting = _starting(queryset, folded, start).order_by(folded, "pk")
    found += _unseen(starting[: shown + len(found)], found)
    if found:
        # Likeness only when nothing is named so or starts so: a typo's answer. Its scan
        # costs far more than the two ranges (docs/performance.md, search), and a name
        # that was found needs no guesses beside it.
        return found[:shown]
    return alike(queryset, name, field=field, folded=folded, shown=shown)


def alike(queryset, name: str, *, field: str = "name", folded: str | None = None, shown: int):
    """Up to `shown` rows of `queryset` whose `field` is most like `name` (best first, at
    least SIMILARITY alike), among those that start with its first character: `named`'s
    last statement, and a list's suggestions when its search box found nothing."""
    queryset, folded = _with_folded(queryset, field, folded)
    # Ordered by the distance alone, which the index yields; a tie's order is the scan's.
    rows = (
        _starting(queryset, folded, name[:1].upper())
        .annotate(search_distance=TrigramDistance(F(field), Value(name)))
        .order_by("search_distance")[:shown]
    )
    return [row for row in rows if row.search_distance <= 1 - SIMILARITY]


def _with_folded(queryset, field: str, folded: str | None):
    """The queryset and the name of its folded `field`: the model's generated column, or
    the expression as an alias."""
    if folded is not None:
        return queryset, folded
    return queryset.alias(search_folded=_folded(field)), "search_folded"


def _starting(queryset, folded: str, start: str):
    """The rows whose folded name starts with `start` (upper-cased): a range of it."""
    starting = queryset.filter(**{f"{folded}__gte": start})
    if (after := after_prefix(start)) is not None:
        starting = starting.filter(**{f"{folded}__lt": after})
    return starting


def name_indexes(
    field: str, *, prefix: str, folded: str | None = None, tenant: str | None = None
) -> list[Index]:
    """The indexes `named` reads a model's `field` through, named `<prefix>_prefix` and
    `<prefix>_trgm`: its upper-cased, C-collated expression (unless the model keeps it
    as a `folded` column of its own, indexed there) and a GiST trigram index. GiST, not
    GIN: only GiST yields rows in trigram-distance order.

    A model that keeps a `folded` column (a table too large to scan) has its trigram
    index lead with that column (btree_gist), so that the likeness reads only the names
    that start with the text's first character. A tenant's table names its `tenant`
    column too: a third index, `<prefix>_tenant_trgm`, leads with the tenant, so that a
    search for a named tenant reads in order of likeness that tenant's rows alone.
    Ordered by likeness across every tenant, with the tenant only a filter, a tenant with
    few or no such rows would have the scan read every other tenant's rows before it
    stopped."""
    leading, opclasses = ([folded], ["gist_text_ops"]) if folded else ([], [])
    indexes: list[Index] = [] if folded else [Index(_folded(field), name=f"{prefix}_prefix")]
    indexes.append(
        GistIndex(
            fields=[*leading, field],
            opclasses=[*opclasses, "gist_trgm_ops"],
            name=f"{prefix}_trgm",
        )
    )
    if tenant is not None:
        indexes.append(
            GistIndex(
                fields=[tenant, *leading, field],
                opclasses=["gist_uuid_ops", *opclasses, "gist_trgm_ops"],
                name=f"{prefix}_tenant_trgm",
            )
        )
    return indexes


def _folded(field: str):
    return Collate(Upper(field), "C")


def _unseen(rows, seen: list) -> list:
    known = {row.pk for row in seen}
    return [row for row in rows if row.pk not in known]


def after_prefix(prefix: str) -> str | None:
    """The first text past every text that starts with `prefix`, in byte order (the
    folded name's collation); None when there is none (the last code point)."""
    for end in range(len(prefix) - 1, -1, -1):
        if ord(prefix[end]) < 0x10FFFF:
            return prefix[:end] + chr(ord(prefix[end]) + 1)
    return None


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
