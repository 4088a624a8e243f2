"""A JSON Schema's canonical string, as the reference registry answers it: the document as
compact JSON, its keys in the order sent (Jackson's `writeValueAsString` of the tree it
read; numbers with a fraction or an exponent kept as `BigDecimal`s, so `1.50` stays `1.50`
and `1e3` becomes `1E+3`). With `normalize=true` the keys are sorted first."""

from __future__ import annotations

import json
from decimal import Decimal

from apps.registry.formats.jackson import jackson, sorted_keys


def json_text(sent, *, normalize: bool = False) -> str:
    """The canonical string of a JSON Schema as sent (its text, or the decoded JSON),
    already known to be valid."""
    if isinstance(sent, str):
        fractions: list = []
        document = json.loads(sent, parse_float=lambda n: fractions.append(n) or Decimal(n))
        if not fractions:
            # json's C writer writes what Jackson does but for a control character's
            # escape (\u001f against Jackson's \u001F): most schemas have neither
            fast = json.dumps(
                document, ensure_ascii=False, separators=(",", ":"), sort_keys=normalize
            )
            if "\\u00" not in fast:
                return fast
    else:
        document = sent
    return jackson(sorted_keys(document) if normalize else document)
