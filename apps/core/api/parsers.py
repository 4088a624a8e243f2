"""JSON bodies, bounded at parse time: a body nested deeper than any Steward document
is refused as bad input before a serializer, a validator or a JSON Schema walks it."""

from __future__ import annotations

import json

from django.conf import settings
from rest_framework import exceptions, parsers

from apps.core.codes import CoreCode

TOO_DEEP = CoreCode.JSON_TOO_DEEP


class JsonTooDeep(ValueError):
    pass


def max_depth() -> int:
    return settings.STEWARD_JSON_MAX_DEPTH


def check_depth(data, limit: int | None = None) -> None:
    """Raise JsonTooDeep when `data` nests lists and objects deeper than `limit`.

    Iterative, so the check itself cannot exhaust the stack it protects."""
    limit = max_depth() if limit is None else limit
    stack = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, dict):
            children = value.values()
        elif isinstance(value, list):
            children = value
        else:
            continue
        if depth > limit:
            raise JsonTooDeep(f"The JSON body nests deeper than {limit} levels.")
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))


def loads_bounded(text: str | bytes, **kwargs):
    """json.loads, refusing (JsonTooDeep) what nests deeper than the limit: the C parser
    recurses, so a body deep enough raises RecursionError inside it, which is refused
    the same way."""
    try:
        data = json.loads(text, **kwargs)
    except RecursionError:
        raise JsonTooDeep("The JSON body nests too deeply.") from None
    check_depth(data)
    return data


class JSONParser(parsers.JSONParser):
    """DRF's strict JSON parser with the depth bound."""

    def parse(self, stream, media_type=None, parser_context=None):
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            data = None
            too_deep = True
        else:
            too_deep = False
        if not too_deep:
            try:
                check_depth(data)
            except JsonTooDeep:
                too_deep = True
        if too_deep:
            raise exceptions.ParseError(
                f"The JSON body nests deeper than {max_depth()} levels.", code=TOO_DEEP
            )
        return data
