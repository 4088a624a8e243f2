"""What governance does with eventing's tenant-owned tables (apps.core.governed)."""

from apps.core.governed import AUTHORITATIVE, DERIVED, Coverage

GOVERNED = {
    # Dispatched rows are deleted by the dispatcher as it publishes them.
    "eventing.OutboxEvent": Coverage(DERIVED, exported=False),
    "eventing.InboxEntry": Coverage(DERIVED, exported=False, retention="steward-event-receipts"),
    "eventing.RecentEvent": Coverage(DERIVED, exported=False, retention="steward-event-receipts"),
    "eventing.DeadLetter": Coverage(DERIVED, exported=True, retention="steward-dead-letters"),
    "eventing.UncertainEffect": Coverage(
        AUTHORITATIVE, exported=False, retention="steward-uncertain-effects"
    ),
}
EXEMPT: dict[str, str] = {}
