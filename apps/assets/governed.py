"""What governance does with the assets' tenant-owned tables (apps.core.governed)."""

from apps.core.governed import AUTHORITATIVE, Coverage

GOVERNED = {
    "assets.Asset": Coverage(AUTHORITATIVE, exported=True, retention="steward-assets"),
    "assets.WorkflowCallback": Coverage(
        AUTHORITATIVE, exported=True, retention="steward-callback-receipts"
    ),
}
EXEMPT: dict[str, str] = {}
