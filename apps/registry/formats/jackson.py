"""JSON written as the reference registry's Jackson writes a tree: the canonical text of
both schema types is made of it."""

from __future__ import annotations

import math
import re
import struct
from decimal import Decimal

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f"}
_ESCAPES["\r"] = "\\r"
_TO_ESCAPE = re.compile(r'[\x00-\x1f"\\]')


def json_string(text: str) -> str:
    """A JSON string as Jackson writes it: other control characters as \\u00XX."""
    escaped = _TO_ESCAPE.sub(lambda m: _ESCAPES.get(m.group(), f"\\u{ord(m.group()):04X}"), text)
    return f'"{escaped}"'


def java_double(value: float) -> str:
    """Java's Double.toString: plain from 10^-3 to 10^7, else d.dddE±n; at least one
    digit after the point; non-finite numbers as Jackson quotes them."""
    if math.isnan(value):
        return '"NaN"'
    if math.isinf(value):
        return '"Infinity"' if value > 0 else '"-Infinity"'
    if value == 0:
        return "-0.0" if math.copysign(1, value) < 0 else "0.0"
    if 1e-3 <= abs(value) < 1e7:
        return repr(value)  # Python's repr is plain here too, with the same shortest digits
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    power = len(text) + exponent - 1
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{power}"


def java_float(value: float) -> float:
    """The double Java reads back from Float.toString of `value` rounded to a float: the
    shortest decimal that names the same single-precision number."""
    single = struct.unpack("f", struct.pack("f", value))[0]
    if not math.isfinite(single):
        return single
    for digits in range(1, 10):
        shortest = float(f"{single:.{digits}g}")
        if struct.unpack("f", struct.pack("f", shortest))[0] == single:
            return shortest
    return single


def big_decimal(value: Decimal) -> str:
    # Java's BigDecimal.toString is the same scientific string, but has no negative zero
    return str(value.copy_abs() if value.is_zero() else value)


def jackson(value, doubles: bool = False) -> str:
    """Compact JSON as Jackson writes a tree: keys in their order, numbers with a fraction
    as the reference's mappers keep them (`doubles`: Avro's, as doubles; else as
    BigDecimal)."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return json_string(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Decimal):
        return java_double(float(value)) if doubles else big_decimal(value)
    if isinstance(value, float):
        return java_double(value) if doubles else big_decimal(Decimal(repr(value)))
    if isinstance(value, list):
        return "[" + ",".join(jackson(item, doubles) for item in value) + "]"
    return (
        "{"
        + ",".join(f"{json_string(key)}:{jackson(item, doubles)}" for key, item in value.items())
        + "}"
    )


def sorted_keys(value):
    if isinstance(value, dict):
        return {key: sorted_keys(value[key]) for key in sorted(value)}
    if isinstance(value, list):
        return [sorted_keys(item) for item in value]
    return value
