"""What governance does with the stores' tenant-owned tables (apps.core.governed)."""

from apps.core.governed import AUTHORITATIVE, RELEASE, Coverage

GOVERNED = {
    "stores.ResidencyRule": Coverage(AUTHORITATIVE, exported=True),
    "stores.StoreBinding": Coverage(RELEASE, exported=True),
    "stores.StoreBindingChange": Coverage(RELEASE, exported=True),
}
EXEMPT: dict[str, str] = {}
