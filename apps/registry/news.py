"""Schema news addressed to each consumer: the names of its delivery topic.

The registry's news about a topic's schema (a version awaiting acknowledgement, a
reminder, a publication, a withdrawal, a lowered compatibility level) is written
twice: once on the shared `registry.schema` topic, for observers, and once per
consumer of the topic, addressed to it, on that consumer's own news topic
`registry.news.<service>`.

Why a topic per addressee, and not an addressee field the dispatcher filters on:
delivery in Steward is one Redis stream per topic, read by one consumer group per
subscription, and a stream cannot hand an entry to one group and hide it from the
others. An addressed entry on a shared stream would reach every reader, each left to
discard what is not its own (a webhook receiver, an external stream reader in any
language). A stream per addressee is delivery that needs no reader to be trusted with
filtering, and it keeps the outbox's guarantees unchanged: the copy is an ordinary
outbox row (at least once, in order per aggregate, the aggregate being the schema's
topic), with its own event id, so each consumer's inbox handles its copy once. It is
also the house pattern (governance's `governance.tasks.<owner>`).

The consumer receives its news through its own subscription: the registry keeps, for
each transport the consumer subscribes with, a delivery subscription on its news topic
that mirrors one of its own (the same webhook endpoint and secret reference, or the
same consumer group name for a stream). See `services.news_delivery_sync`.

This module names things only (it imports nothing of the registry), so the models'
neighbours, the selectors and eventing can all use it.
"""

from __future__ import annotations

import hashlib
import re

NEWS_TOPIC_PREFIX = "registry.news."
# What a Kafka topic name may hold (Topic's own constraint).
_NOT_IN_A_TOPIC_NAME = re.compile(r"[^a-zA-Z0-9._-]")

# The events a consumer receives addressed to it.
AWAITING = "SchemaVersionAwaitingAcknowledgement"
PUBLISHED = "SchemaVersionPublished"
WITHDRAWN = "SchemaVersionWithdrawn"
LOWERED = "TopicCompatibilityLowered"
PRODUCERS_JOINED = "TopicProducersJoined"


def news_topic(service_name: str) -> str:
    """`registry.news.<service>`. A name with characters a topic name may not hold gets
    them replaced and a short digest of the real name appended, so two services never
    share one news topic."""
    safe = _NOT_IN_A_TOPIC_NAME.sub("_", service_name)
    if safe != service_name:
        safe = f"{safe}.{hashlib.sha256(service_name.encode()).hexdigest()[:8]}"
    return f"{NEWS_TOPIC_PREFIX}{safe}"


def is_news_topic(topic_name: str) -> bool:
    return topic_name.startswith(NEWS_TOPIC_PREFIX)
