"""The attention queue at `/metrics` (apps.core.metrics): one gauge of items per kind,
and how long the oldest open one has waited (docs/attention-alerts.yml alerts on both)."""

from __future__ import annotations

from django.utils import timezone

from apps.attention import selectors
from apps.core.attention import kinds
from apps.core.metrics import gauge


def collect():
    counts = selectors.counts()
    yield gauge(
        "steward_attention_items",
        "Items waiting on a person in the attention queue, by kind.",
        [([slug], n) for slug, n in counts.items()],
        labels=["kind"],
    )
    now = timezone.now()
    oldest = selectors.oldest_open()
    yield gauge(
        "steward_attention_oldest_seconds",
        "How long the oldest item of each kind has waited in the attention queue (0: none).",
        [([slug], _age(now, oldest.get(slug))) for slug in kinds()],
        labels=["kind"],
    )


def _age(now, entered) -> float:
    return (now - entered).total_seconds() if entered else 0.0
