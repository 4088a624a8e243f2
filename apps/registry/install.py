"""What every set-up installs for the registry (apps.core.setup): Steward's own topics,
before anything emits on them, and each consumer's delivery of schema news
(apps.registry.news)."""

from __future__ import annotations

from apps.core.context import SYSTEM_ACTOR
from apps.registry.catalog import install_steward_topics
from apps.registry.services import news_delivery_sync_all


def install_topics(report) -> None:
    report.created += [f"topic {name}" for name in install_steward_topics()]
    # Idempotent: a consumer whose news subscriptions are in step gets no new row.
    news_delivery_sync_all(actor=SYSTEM_ACTOR)
