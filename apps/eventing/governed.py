"""What governance does with eventing's tenant-owned tables (apps.core.governed)."""

from apps.core.governed import AUTHORITATIVE, DERIVED, Coverage

GOVERNED = {
    "eventing.OutboxEvent": Coverage(DERIVED, exported=False, retention="outbox-dispatched"),
    "eventing.InboxEntry": Coverage(DERIVED, exported=False, retention="inbox-window"),
    "eventing.RecentEvent": Coverage(DERIVED, exported=False, retention="inbox-window"),
    "eventing.DeadLetter": Coverage(DERIVED, exported=True, retention="dead-letters-resolved"),
    "eventing.UncertainEffect": Coverage(AUTHORITATIVE, exported=False),
}
EXEMPT: dict[str, str] = {}
