"""Announcements of schema news: once on the shared `registry.schema` topic, for
observers, and once to each consumer concerned, on its own news topic
(apps.registry.news). Announcing reads the catalog; it never writes it."""

from __future__ import annotations

from apps.core.context import Actor
from apps.core.outbox import NewEvent, emit, emit_many
from apps.registry.models import SchemaVersion, Topic
from apps.registry.news import LOWERED, PRODUCERS_JOINED, news_topic
from apps.registry.selectors import news_hearers
from apps.registry.versions.readers import undeclared_verdict
from apps.tenancy.audit import audit_record

TOPIC = "registry.schema"


def announce(
    version: SchemaVersion, event_type: str, *, addressees: list[str] | None = None, **payload
) -> None:
    """Announce news of the version: once on the shared topic, for observers, and once to
    each addressee (every consumer of the topic unless named), on its own news topic
    (apps.registry.news). A consumer with no subscription to receive it gets no copy; it
    is listed by `selectors.unreachable_consumers` instead, for an operator."""
    topic = version.topic
    consumers = getattr(topic, "consumer_names", None)
    if consumers is None:  # [] is a sync's word that the topic has none
        consumers = sorted(topic.consumers.values_list("name", flat=True))
    body = {
        "topic": topic.name,
        "version": version.version,
        "fingerprint": version.fingerprint,
        "verdict": version.verdict,
        "consumers": consumers,
        **({"role": version.role} if version.role != "value" else {}),
        # the data contract the consumers' clients run, when the version has one
        **{k: v for k, v in (("metadata", version.metadata), ("ruleSet", version.rule_set)) if v},
        **payload,
    }
    verdict = version.verdict if isinstance(version.verdict, dict) else {}
    readers = verdict.get("readers")
    if readers:
        # Who need not act, said outright: a consumer reading the news should not have to
        # dig through the verdict to learn that its reader reads the version.
        body["reads_it"] = version.reads_it
    _tell(
        topic,
        event_type,
        body,
        consumers if addressees is None else addressees,
        readers,
        undeclared_verdict(verdict),
    )


def _tell(
    topic: Topic, event_type: str, body: dict, addressees, readers=None, undeclared=None
) -> None:
    """The news once on the shared topic, then a copy to each addressee."""
    shared = emit(
        topic=TOPIC,
        event_type=event_type,
        aggregate_type="topic",
        aggregate_id=topic.name,
        payload=body,
    )
    _address(topic, event_type, body, addressees, shared, readers=readers, undeclared=undeclared)


def _address(
    topic: Topic,
    event_type: str,
    body: dict,
    addressees,
    shared,
    *,
    readers: dict | None = None,
    undeclared: dict | None = None,
) -> None:
    """One copy of the announcement `shared` to each addressee that consumes the topic
    and has an active subscription on its own news topic to receive it there (made when
    it was registered as a consumer or subscribed: `services.news_delivery_sync`). With
    `readers` (the per-consumer verdicts of a version of a topic with declared readers),
    each copy carries its addressee's own verdict as `reader` (`undeclared`, for one the
    verdicts leave out: it declared no reader), so the consumer learns at once whether it
    must act."""
    copies = [
        NewEvent(
            topic=news_topic(service),
            event_type=event_type,
            # The schema's topic is the aggregate, as on the shared topic: all news of one
            # topic leaves in one lane, in the order it was written, to every addressee.
            aggregate_type="topic",
            aggregate_id=topic.name,
            payload={
                **body,
                "addressee": service,
                **({"reader": readers.get(service, undeclared)} if readers else {}),
            },
            # Ties each copy to the one announcement observers saw.
            causation_id=str(shared.event_id),
        )
        for service in news_hearers(topic, addressees)
    ]
    if copies:
        emit_many(copies)


def announce_lowering(
    actor: Actor, topic: Topic, before: str, after: str, consumers, *, setting: str = "level"
) -> None:
    """TopicCompatibilityLowered, on the shared topic and to each consumer: what the
    topic's next version is checked against has changed under them (`setting`: its
    compatibility level, or its policy)."""
    body = {
        "topic": topic.name,
        "setting": setting,
        "from": before,
        "to": after,
        "consumers": consumers,
        "by": actor.label,
    }
    _tell(topic, LOWERED, body, consumers)


def producers_joined(actor: Actor, topic: Topic, before: list[str], joined: list[str]) -> None:
    """Services that became producers of an existing topic (an operator's act, or its
    producers' grant), audited and announced as TopicProducersJoined on the shared topic
    and to each consumer: a producer may lower the topic's level and publish on it."""
    after = sorted({*before, *joined})
    audit_record(
        actor=actor,
        action="topic.producers_join",
        instance=topic,
        changes={"producers": [before, after]},
    )
    consumers = getattr(topic, "consumer_names", None)
    if consumers is None:
        consumers = sorted(topic.consumers.values_list("name", flat=True))
    body = {
        "topic": topic.name,
        "joined": joined,
        "producers": after,
        "consumers": consumers,
        "by": actor.label,
    }
    _tell(topic, PRODUCERS_JOINED, body, consumers)
