"""Events by event id in the console's search (apps.core.search): waiting in the
outbox, seen on the streams, or dead. The eventing pages are operators' pages, and so
are these matches."""

from __future__ import annotations

from urllib.parse import urlencode

from django.urls import reverse

from apps.core.search import Match, Query
from apps.eventing import selectors
from apps.eventing.models import OutboxEvent

SHOWN = 20


def find(query: Query, request) -> list[Match]:
    if query.uuid is None or not getattr(request.user, "is_operator", False):
        return []
    found: list[Match] = [
        # No selector reads the outbox (the dispatcher reads it in SQL); the unique
        # event_id index serves this one lookup.
        Match(
            "Event (outbox)",
            f"{event.topic}/{event.event_type} {event.event_id}",
            reverse("eventing:overview"),
            "waiting to be dispatched",
        )
        for event in OutboxEvent.objects.filter(event_id=query.uuid)[:SHOWN]
    ]
    found += [
        Match(
            "Event",
            str(event),
            "{}?{}".format(
                reverse("eventing:recent-list"),
                urlencode({"aggregate_id": event.aggregate_id, "topic": event.topic}),
            ),
            event.aggregate_label,
        )
        for event in selectors.recent_event_list().filter(event_id=query.uuid)[:SHOWN]
    ]
    found += [
        Match(
            "Dead letter",
            str(dead),
            dead.get_absolute_url(),
            f"for {dead.subscription.consumer.name}",
        )
        for dead in selectors.dead_letter_list().filter(event_id=query.uuid)[:SHOWN]
    ]
    return found
