"""Steward's own consumers."""

from apps.eventing.consumer_registry import consumer
from apps.eventing.envelope import Envelope
from apps.eventing.models import RecentEvent


@consumer("steward.recent-events", batch=True)
def record_recent_events(envelopes: list[Envelope]) -> None:
    """Keep the latest events for the console's eventing page (swept with the inbox)."""
    RecentEvent.objects.bulk_create(
        RecentEvent(
            event_id=envelope.event_id,
            topic=envelope.topic,
            event_type=envelope.event_type,
            tenant_id=envelope.tenant_id,
            aggregate_type=envelope.aggregate_type,
            aggregate_id=envelope.aggregate_id,
            occurred_at=envelope.occurred_at,
        )
        for envelope in envelopes
    )
