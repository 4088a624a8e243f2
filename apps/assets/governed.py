"""What governance does with the assets' tenant-owned tables (apps.core.governed)."""

from apps.core.governed import AUTHORITATIVE, Coverage

GOVERNED = {
    "assets.Asset": Coverage(AUTHORITATIVE, exported=True),
    "assets.WorkflowCallback": Coverage(AUTHORITATIVE, exported=True),
}
EXEMPT: dict[str, str] = {}
