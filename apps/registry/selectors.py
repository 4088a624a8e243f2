"""Reads of the topic catalog."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import QuerySet

from apps.registry.models import Subscription, Topic

logger = logging.getLogger(__name__)
TOPIC_CACHE_SECONDS = 300


@dataclass(frozen=True)
class ResolvedTopic:
    id: int
    name: str
    schema_version: int


def _cache_key(name: str) -> str:
    return f"registry:topic:{name}"


def resolve_topic(name: str) -> ResolvedTopic | None:
    """The topic and its current schema version, or None when there is no such topic.

    Served from the cache, which registry writes invalidate (apps.registry.signals).
    The cache is an optimisation only: when Redis is away, the database answers, so
    producers keep writing to the outbox through a Redis outage.
    """
    key = _cache_key(name)
    try:
        cached = cache.get(key)
    except Exception:  # noqa: BLE001 - any cache failure falls back to the database
        logger.warning("topic cache unavailable; resolving %s from the database", name)
        cached = None
    if cached is not None:
        return ResolvedTopic(*cached)
    row = (
        Topic.objects.filter(name=name).values_list("id", "name", "current_schema_version").first()
    )
    if row is None:
        return None
    with contextlib.suppress(Exception):  # caching is best effort
        cache.set(key, row, TOPIC_CACHE_SECONDS)
    return ResolvedTopic(*row)


def forget_topic(name: str) -> None:
    try:
        cache.delete(_cache_key(name))
    except Exception:  # noqa: BLE001 - the entry expires by itself
        logger.warning("could not invalidate the cached topic %s", name)


def topic_list() -> QuerySet[Topic]:
    return Topic.objects.prefetch_related("producers", "consumers")


def subscription_list() -> QuerySet[Subscription]:
    return Subscription.objects.select_related("consumer", "topic")


def active_subscriptions(transport: str | None = None) -> list[Subscription]:
    qs = subscription_list().filter(is_active=True)
    if transport:
        qs = qs.filter(transport=transport)
    return list(qs)


def schema_version_list():
    from apps.registry.models import SchemaVersion

    return SchemaVersion.objects.select_related("topic", "submitted_by").prefetch_related(
        "acknowledgements__consumer"
    )


def pending_versions():
    """Versions awaiting acknowledgement, each with `awaiting_names` (the consumers that
    have not acknowledged), in a fixed number of queries."""
    from django.db.models import Prefetch

    from apps.registry.models import Acknowledgement, SchemaVersion

    versions = (
        SchemaVersion.objects.filter(state=SchemaVersion.State.AWAITING)
        .select_related("topic", "submitted_by")
        .prefetch_related(
            "topic__consumers",
            Prefetch(
                "acknowledgements",
                queryset=Acknowledgement.objects.filter(withdrawn_at__isnull=True).select_related(
                    "consumer"
                ),
            ),
        )
    )
    return versions
