"""Store bindings by id in the console's search (apps.core.search)."""

from __future__ import annotations

from apps.core.search import Match, Query
from apps.stores import selectors

SHOWN = 20


def find(query: Query, request) -> list[Match]:
    if query.uuid is None:
        return []
    bindings = selectors.binding_list().prefetch_related(None).filter(pk=query.uuid)
    return [
        Match(
            "Store binding",
            f"{binding.store} for {binding.tenant.slug}",
            binding.get_absolute_url(),
            f"{binding.region.slug}, {binding.get_status_display().lower()}",
        )
        for binding in bindings[:SHOWN]
    ]
