"""FastJSONRenderer writes the bytes DRF's JSONRenderer writes, over generated
documents of everything a serializer's data holds (floats aside: orjson writes the
same number in fewer characters, `1e-07` as `1e-7`, so those are compared as JSON)."""

import json
import uuid
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from zoneinfo import ZoneInfo

from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.utils.serializer_helpers import ReturnDict, ReturnList

from apps.core.api.renderers import FastJSONRenderer, datetimes_in_utc

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),  # past 64 bits: DRF's path
    st.text(),  # any code point, U+2028 and U+2029 among them
    st.uuids(),
    st.datetimes(timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30))])),
    st.dates(),
    st.decimals(allow_nan=False, allow_infinity=False, places=3),
)
documents = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.text(max_size=8), inner, max_size=5),
        st.dictionaries(st.integers(), inner, max_size=3),
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(documents)
def test_the_fast_renderer_writes_what_drf_writes(document):
    assert FastJSONRenderer().render(document) == JSONRenderer().render(document)


# What a list built from rows (apps.core.api.rows) leaves for the renderer to write:
# datetimes whose offset is none, whatever their zone says.
utc_datetimes = st.datetimes(
    timezones=st.sampled_from([UTC, timezone(timedelta(0)), ZoneInfo("UTC"), ZoneInfo("Etc/UTC")])
)
utc_documents = st.recursive(
    st.one_of(scalars.filter(lambda value: not isinstance(value, datetime)), utc_datetimes),
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(utc_documents)
def test_an_answer_marked_utc_is_written_as_drf_writes_it(document):
    marked = {"response": datetimes_in_utc(Response())}
    assert FastJSONRenderer().render(document, renderer_context=marked) == (
        JSONRenderer().render(document)
    )


def test_what_orjson_would_write_differently_is_left_to_drf_unless_marked():
    # local mean time: an offset with seconds, which orjson rounds to the minute
    before_1900 = datetime(1800, 1, 1, 12, tzinfo=ZoneInfo("Europe/Amsterdam"))
    assert before_1900.utcoffset().seconds % 60
    assert FastJSONRenderer().render([before_1900]) == JSONRenderer().render([before_1900])
    marked = {"response": datetimes_in_utc(Response())}
    assert FastJSONRenderer().render([before_1900], renderer_context=marked) != (
        JSONRenderer().render([before_1900])
    )


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=10))
def test_floats_are_the_same_numbers(numbers):
    assert json.loads(FastJSONRenderer().render(numbers)) == json.loads(
        JSONRenderer().render(numbers)
    )


def test_what_serializers_return_and_what_clients_ask_for_render_alike():
    page = ReturnDict(
        {"results": ReturnList([{"id": uuid.uuid4(), "at": datetime.now(UTC)}], serializer=None)},
        serializer=None,
    )
    for document, media_type in (
        (page, None),
        ({"day": date(2026, 1, 1), "n": Decimal("1.50")}, None),
        ({"line": "a\u2028b\u2029c"}, None),
        ({"indented": [1, 2]}, "application/json; indent=4"),
    ):
        assert FastJSONRenderer().render(document, media_type) == JSONRenderer().render(
            document, media_type
        )
    assert FastJSONRenderer().render(None) == b""
