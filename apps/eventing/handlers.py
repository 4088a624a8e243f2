"""Steward's own consumers."""

from apps.eventing.consumers import consumer
from apps.eventing.envelope import Envelope
from apps.eventing.models import RecentEvent


@consumer("steward.recent-events")
def record_recent_event(envelope: Envelope) -> None:
    """Keep the latest events for the console's eventing page (swept with the inbox)."""
    RecentEvent.objects.create(
        event_id=envelope.event_id,
        topic=envelope.topic,
        event_type=envelope.event_type,
        tenant_id=envelope.tenant_id,
        aggregate_type=envelope.aggregate_type,
        aggregate_id=envelope.aggregate_id,
        occurred_at=envelope.occurred_at,
    )
