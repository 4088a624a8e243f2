"""The registry's gauges at `/metrics` (apps.core.metrics): breaking versions held."""

from __future__ import annotations

from apps.core.metrics import gauge
from apps.registry.models import SchemaVersion


def versions_awaiting_acknowledgement() -> int:
    return SchemaVersion.objects.filter(state=SchemaVersion.State.AWAITING).count()


def collect():
    yield gauge(
        "steward_schema_versions_awaiting_acknowledgement",
        "Breaking schema versions held until every consumer acknowledges.",
        versions_awaiting_acknowledgement(),
    )
