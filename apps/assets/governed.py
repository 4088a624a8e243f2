"""What governance does with the assets' tenant-owned tables (apps.core.governed)."""

from apps.core.governed import AUTHORITATIVE, Coverage

GOVERNED = {
    "assets.Asset": Coverage(AUTHORITATIVE, exported=True, retention="steward-assets"),
    "assets.WorkflowCallback": Coverage(
        AUTHORITATIVE, exported=True, retention="steward-callback-receipts"
    ),
}
EXEMPT: dict[str, str] = {}
# The rows of a governed table that are open work (SQL over the table's columns): no
# retention rule expires them, whatever their age (apps.governance.retention.sweeper).
# A pending receipt waits on a worker; an unknown-instance one nobody has linked or
# dismissed waits on a person in the attention queue (kind unknown-callback).
OPEN_WORK = {
    "assets.WorkflowCallback": (
        "outcome = 'pending' OR (outcome = 'unknown_instance' AND resolution = '')"
    ),
}
