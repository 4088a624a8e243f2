"""The registry's gauges at `/metrics` (apps.core.metrics): breaking versions held, and
consumers that schema news cannot reach."""

from __future__ import annotations

from apps.core.metrics import gauge
from apps.registry.models import SchemaVersion
from apps.registry.selectors import unreachable_consumers


def versions_awaiting_acknowledgement() -> int:
    return SchemaVersion.objects.filter(state=SchemaVersion.State.AWAITING).count()


def collect():
    yield gauge(
        "steward_schema_versions_awaiting_acknowledgement",
        "Breaking schema versions held until every consumer acknowledges.",
        versions_awaiting_acknowledgement(),
    )
    yield gauge(
        "steward_schema_news_unreachable_consumers",
        "Consumers of a topic with schema versions that have no active subscription to "
        "receive its schema news through (one per consumer and topic).",
        len(unreachable_consumers()),
    )
