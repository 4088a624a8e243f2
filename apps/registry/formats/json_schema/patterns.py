"""patternProperties regexes, run only when they cannot backtrack without end."""

from __future__ import annotations

import re

from apps.registry.formats.json_schema.vocabulary import _MISSING

_REGEXES: dict = {}


def _search(pattern, name):
    """Whether a patternProperties regex matches a name; None when unsafe to tell."""
    regex = _REGEXES.get(pattern, _MISSING)
    if regex is _MISSING:
        regex = None
        if not _risky(pattern):
            try:
                regex = re.compile(pattern)
            except (re.error, RecursionError, OverflowError, TypeError):
                regex = None
        if len(_REGEXES) > 512:
            _REGEXES.clear()
        _REGEXES[pattern] = regex
    if regex is None or len(name) > 1024:
        return None
    return regex.search(name) is not None


def _risky(pattern) -> bool:
    """Backreferences, or a repeated group that repeats or branches inside: may backtrack
    exponentially, and nothing here may hang on a schema's regex."""
    if type(pattern) is not str or len(pattern) > 1000:
        return True
    groups: list = []  # per open group: whether it repeats or branches inside
    in_class = False
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 < n and (pattern[i + 1].isdigit() and pattern[i + 1] != "0"):
                return True
            if i + 1 < n and pattern[i + 1] == "k":
                return True
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
        elif c == "[":
            in_class = True
        elif c == "(":
            groups.append(False)
            if i + 1 < n and pattern[i + 1] == "?":
                i += 1  # (?:  (?=  (?P<...>: the ? is not a quantifier
        elif c == ")":
            inner = groups.pop() if groups else False
            following = pattern[i + 1] if i + 1 < n else ""
            if inner and following in ("*", "+", "{"):
                return True
            if groups:
                groups[-1] = groups[-1] or inner or following in ("*", "+", "{", "?")
        elif c in "*+{?|" and groups:
            groups[-1] = True
        i += 1
    return False
