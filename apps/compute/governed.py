"""What governance does with compute's tenant-owned tables (apps.core.governed)."""

from apps.core.governed import AUTHORITATIVE, DERIVED, Coverage

GOVERNED = {
    "compute.ComputeBatch": Coverage(AUTHORITATIVE, exported=True),
    "compute.BatchCompletion": Coverage(DERIVED, exported=False),
    "compute.WorkflowBatchLink": Coverage(DERIVED, exported=False),
}
EXEMPT: dict[str, str] = {}
