"""What governance does with eventing's tenant-owned tables (apps.core.governed)."""

from apps.core.governed import AUTHORITATIVE, DERIVED, Coverage

GOVERNED = {
    # Dispatched rows leave the outbox for the dispatched log as they are published.
    "eventing.OutboxEvent": Coverage(DERIVED, exported=False),
    # Published envelopes, kept for the inbox window to re-drive a Redis that lost them.
    "eventing.DispatchedEvent": Coverage(
        DERIVED, exported=False, retention="steward-dispatched-events"
    ),
    "eventing.InboxEntry": Coverage(DERIVED, exported=False, retention="steward-event-receipts"),
    "eventing.RecentEvent": Coverage(DERIVED, exported=False, retention="steward-event-receipts"),
    "eventing.DeadLetter": Coverage(DERIVED, exported=True, retention="steward-dead-letters"),
    "eventing.UncertainEffect": Coverage(
        AUTHORITATIVE, exported=False, retention="steward-uncertain-effects"
    ),
}
EXEMPT: dict[str, str] = {}
