"""JSON answers through orjson, byte for byte what DRF's JSONRenderer writes.

DRF's renderer is json.dumps with its own encoder; orjson writes the same compact
UTF-8 several times faster. What the two would write differently goes through DRF's
own code instead: datetimes, dates, times and decimals (orjson hands them to DRF's
encoder, which writes them as DRF always has), anything orjson refuses (an integer
past 64 bits, a type it does not know: DRF's renderer then renders the whole answer),
an `indent` the client asked for, and the two line separators DRF escapes so the
answer stays a valid JavaScript literal. tests/core/test_renderers.py holds the two to
the same bytes over generated documents. problem+json answers set their own content
type on the response, as before.

A list built from rows (apps.core.api.rows) leaves its datetimes as they are when they
are in UTC, and says so on its response (`datetimes_in_utc`): orjson then writes them
itself, `Z` for UTC, the bytes DRF writes for every datetime whose offset is whole
minutes, as UTC's is. Other answers keep DRF's way, which also covers offsets with
seconds (a zone's local mean time before 1900), which orjson rounds to the minute.
"""

from __future__ import annotations

import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_NON_STR_KEYS
_UTC_OPTIONS = orjson.OPT_UTC_Z | orjson.OPT_NON_STR_KEYS
_encoder = JSONEncoder()


def datetimes_in_utc(response):
    """Mark `response` as holding no datetime but UTC ones, for orjson to write."""
    response.datetimes_in_utc = True
    return response


class FastJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if self.get_indent(accepted_media_type, renderer_context or {}):
            return super().render(data, accepted_media_type, renderer_context)
        response = (renderer_context or {}).get("response")
        options = _UTC_OPTIONS if getattr(response, "datetimes_in_utc", False) else _OPTIONS
        try:
            body = orjson.dumps(data, default=_encoder.default, option=options)
        except TypeError:
            return super().render(data, accepted_media_type, renderer_context)
        if b"\xe2\x80\xa8" in body or b"\xe2\x80\xa9" in body:
            body = body.replace(b"\xe2\x80\xa8", b"\\u2028").replace(b"\xe2\x80\xa9", b"\\u2029")
        return body
