"""An object's URL at the cost of a string join.

Django's `reverse()` walks the URL configuration's patterns on every call: on a console
list page each row's link and action buttons reverse a URL, and those calls were a tenth
of the page's time. A named pattern whose one argument is an object's key gives the same
text around every key, so `reverse_pk` reverses it once per URL configuration and script
prefix with a stand-in key and puts each key in its place. Anything it cannot show to be
that simple (other argument types, a stand-in the pattern refuses or repeats) goes
through `reverse()` itself.

A pattern without arguments is kept whole (`reverse_fixed`): the links around every
console page are the same on each.

Finding the template means reading the request's URL configuration and script prefix,
two context-local look-ups that cost more than the rest of the call; a page writing
fifty rows reads them once, in a `fixed_prefix()` block (apps.console's `list_rows`, and
its context processor for the chrome's links).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from django.conf import settings
from django.urls import NoReverseMatch, get_script_prefix, get_urlconf, reverse

# One stand-in per key type the URL converters take; each must be a value those
# converters accept, written by `str()` as they write it.
_STAND_INS = (uuid.UUID("5e1ec7ed-0000-4000-8000-00000000c0de"), 987_654_321_012_345)
_UNSUITED = object()
_templates: dict[tuple, object] = {}
# (URL configuration, script prefix) inside a `fixed_prefix()` block
_fixed: ContextVar[tuple[str, str] | None] = ContextVar("steward_url_prefix", default=None)


def _where() -> tuple[str, str]:
    return (get_urlconf() or settings.ROOT_URLCONF, get_script_prefix())


@contextmanager
def fixed_prefix() -> Iterator[None]:
    """Within the block, `reverse_pk` and `reverse_fixed` take the URL configuration and
    script prefix as they are on entry: for code that writes many URLs and sets neither
    (a page's rows, its chrome)."""
    token = _fixed.set(_where())
    try:
        yield
    finally:
        _fixed.reset(token)


def script_prefix() -> str:
    """The script prefix in force: the block's, inside `fixed_prefix()`."""
    return (_fixed.get() or _where())[1]


def _template(viewname: str, kind: type):
    stand_in = next(s for s in _STAND_INS if type(s) is kind)
    try:
        url = reverse(viewname, args=[stand_in])
    except NoReverseMatch:
        return _UNSUITED
    text = str(stand_in)
    if url.count(text) != 1:
        return _UNSUITED
    prefix, _, suffix = url.partition(text)
    return prefix, suffix


def _remembered(viewname: str, kind, make):
    """What `make()` gives for the URL configuration and script prefix in force (the
    block's, inside `fixed_prefix()`), made once for each."""
    fixed = _fixed.get()
    key = (viewname, kind, fixed or _where())
    found = _templates.get(key)
    if found is None:
        found = make()
        # made by `reverse()`, under the configuration and prefix of now: kept only if
        # those are the block's (code that changed them inside it gets the answer once)
        if fixed is None or fixed == _where():
            _templates[key] = found
    return found


def _reversed(viewname: str, current_app: str | None):
    try:
        return reverse(viewname, current_app=current_app)
    except NoReverseMatch:
        return _UNSUITED


def reverse_fixed(viewname: str, current_app: str | None = None) -> str:
    """`reverse(viewname, current_app=current_app)` for a pattern without arguments,
    whose URL changes only with the URL configuration and script prefix: reversed once
    for each (a page's chrome links to a dozen of them, and `{% url %}` without
    arguments comes here: apps.console.templatetags.urls). Raises NoReverseMatch as
    `reverse()` does."""
    url = _remembered(viewname, ("app", current_app), lambda: _reversed(viewname, current_app))
    if url is _UNSUITED:
        return reverse(viewname, current_app=current_app)  # raises as reverse() does
    return url


def reverse_pk(viewname: str, pk) -> str:
    """`reverse(viewname, args=[pk])`, for a UUID or integer key."""
    kind = type(pk)
    if kind is not uuid.UUID and kind is not int:
        return reverse(viewname, args=[pk])
    template = _remembered(viewname, kind, lambda: _template(viewname, kind))
    if template is _UNSUITED:
        return reverse(viewname, args=[pk])
    prefix, suffix = template
    return f"{prefix}{pk}{suffix}"
