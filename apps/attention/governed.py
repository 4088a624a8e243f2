"""What governance does with the attention queue's rows (apps.core.governed): they are
rebuilt by the next scan from the apps' own rows, so a deletion drops them first."""

from apps.core.governed import DERIVED, Coverage

GOVERNED = {"attention.AttentionEntry": Coverage(DERIVED, exported=False)}
EXEMPT: dict[str, str] = {}
