"""The attention queue, read: every kind's items now, and the queue's own memory."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from django.db.models import Count, Min, QuerySet
from django.utils import timezone

from apps.attention.models import AttentionEntry
from apps.core.attention import Item, Kind, kinds


@dataclass
class Group:
    kind: Kind
    items: list[Item]

    @property
    def count(self) -> int:
        return len(self.items)


def queue(kind: str | None = None) -> list[Group]:
    """Each kind (or the one named) with its items now, oldest first. The kinds read in
    the system scope: the queue is the operators'. An item whose kind cannot say since
    when it waits is dated from its entry into the queue (now, for a new one)."""
    chosen = [k for slug, k in kinds().items() if kind in (None, slug)]
    groups = [Group(k, k.items()) for k in chosen]
    if any(item.since is None for group in groups for item in group.items):
        entered = {(e.kind, e.key): e.entered_at for e in open_entries()}
        now = timezone.now()
        for group in groups:
            group.items = [
                item
                if item.since is not None
                else replace(item, since=entered.get((group.kind.slug, item.key), now))
                for item in group.items
            ]
    for group in groups:
        group.items.sort(key=lambda item: item.since)
    return groups


def counts() -> dict[str, int]:
    """How many items each kind has now (one cheap count per kind)."""
    return {slug: k.count() for slug, k in kinds().items()}


def open_entries() -> QuerySet[AttentionEntry]:
    return AttentionEntry.objects.filter(left_at=None)


def oldest_open() -> dict[str, datetime]:
    """When the longest-waiting open item of each kind entered the queue."""
    rows = open_entries().values_list("kind").annotate(oldest=Min("entered_at"), n=Count("id"))
    return {kind: oldest for kind, oldest, _ in rows}
