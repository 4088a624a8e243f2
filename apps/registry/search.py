"""Topics and services (by name: exact, its start in any case, or like it;
apps.core.search.named) and schema versions (by fingerprint or schema id) in the
console's search (apps.core.search)."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse

from apps.core.search import Match, Query, named
from apps.registry import selectors

SHOWN = 20


def _listed(name: str, **params) -> str:
    return f"{reverse(name)}?{urlencode(params)}"


def find(query: Query, request) -> list[Match]:
    found: list[Match] = []
    if query.name is not None:
        found += [
            Match("Topic", topic.name, _listed("registry:topic-list", q=topic.name))
            for topic in named(selectors.topics_named(), query.name, shown=SHOWN)
        ]
        found += [
            Match(
                "Service",
                service.name,
                _listed("registry:topic-list", producer=service.name),
                service.description,
            )
            for service in named(selectors.service_list(), query.name, shown=SHOWN)
        ]
    versions = selectors.schema_version_list().prefetch_related(None)
    if query.fingerprint is not None:
        versions = versions.filter(fingerprint=query.fingerprint)
    elif query.number is not None:
        versions = versions.filter(pk=query.number)
    else:
        return found
    found += [
        Match(
            "Schema version",
            str(version),
            version.get_absolute_url(),
            f"schema id {version.pk}, {version.get_state_display().lower()}",
        )
        for version in versions[:SHOWN]
    ]
    return found
