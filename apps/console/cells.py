"""Values written into the console's HTML as the template language writes them, at
the cost of a type check: a list page's fifty rows of cells and a chart's hundreds of
coordinates went through the template language's per-value work one by one."""

from __future__ import annotations

import datetime
import functools
import html
import re
import uuid

from django.conf import settings
from django.template.base import render_value_in_context
from django.utils import dateformat, timezone, translation
from django.utils.formats import get_format

# Format characters that read the seconds or finer (django.utils.dateformat): a format
# without any writes every moment of a minute alike.
_FINER_THAN_MINUTES = frozenset("suvUcr")

# State as people read it in a table: an empty value a dash, a yes/no a tick or a dash
# with the word for a screen reader (never Python's None, True, False).
EMPTY = '<span class="muted" title="none">—</span>'
YES = '<span aria-hidden="true">✓</span><span class="visually-hidden">yes</span>'
NO = '<span class="muted" aria-hidden="true">—</span><span class="visually-hidden">no</span>'
# Where a code (`schema_version.acknowledge`) may wrap: after each "." and "_".
_CODE_BREAKS = re.compile(r"(?<=[._])(?=.)")
BECOMES = (
    ' <span class="muted" aria-hidden="true">→</span><span class="visually-hidden">becomes</span> '
)


def change_lines(changes: dict, write) -> str:
    """An audit entry's `{field: [before, after]}` as one line per field, "status: — →
    requested", each value written by `write` (a value that is not a pair is an after)."""
    lines = []
    for field, diff in changes.items():
        before, after = diff if isinstance(diff, list | tuple) and len(diff) == 2 else (None, diff)
        name = html.escape(str(field).replace("_", " "))
        lines.append(
            f'<li><span class="change-field">{name}</span>: '
            f"{write(before)}{BECOMES}{write(after)}</li>"
        )
    return f'<ul class="changes">{"".join(lines)}</ul>'


@functools.lru_cache(maxsize=4096)
def _written(moment: tuple, language: str | None, zone, minute: datetime.datetime) -> str:
    """`minute` (its seconds zeroed, in `zone`) written in `moment`'s pieces: a list
    page's times fall in a few minutes, and each took a DateFormat of its own."""
    written = dateformat.DateFormat(minute)
    return "".join(str(getattr(written, p)()) if char else p for char, p in moment)


class Cells:
    """Writes a value as `{{ value }}` would in `context` (local time, localized,
    escaped), doing once per page what the template language does for every value:
    most of a list page's cells, and a chart's coordinates, are plain strings,
    booleans, UUIDs, numbers and datetimes."""

    def __init__(self, context):
        self.context = context
        self.autoescape = context.autoescape
        use_tz = settings.USE_TZ if context.use_tz is None else context.use_tz
        self.zone = timezone.get_current_timezone() if use_tz else None
        # Numbers are written as str() writes them unless the locale groups digits or
        # separates decimals otherwise (django.utils.numberformat.format).
        self.plain_numbers = context.use_l10n is False or (
            not settings.USE_THOUSAND_SEPARATOR
            and get_format("DECIMAL_SEPARATOR", use_l10n=context.use_l10n) == "."
        )
        moment = get_format("DATETIME_FORMAT", use_l10n=context.use_l10n)
        # dateformat.Formatter.format's split, made once: (is a format character, text)
        self.moment = tuple(
            (i % 2 == 1, piece if i % 2 else dateformat.re_escaped.sub(r"\1", piece))
            for i, piece in enumerate(dateformat.re_formatchars.split(str(moment)))
            if piece
        )
        # The language too: month names and "noon" are translated.
        self.language = translation.get_language()
        self.by_minute = not any(char and p in _FINER_THAN_MINUTES for char, p in self.moment)

    def __call__(self, value) -> str:
        kind = type(value)
        if kind is str:
            # django.utils.html.escape is html.escape behind a lazy-string check
            return html.escape(value) if self.autoescape else value
        if kind is bool or value is None or kind is uuid.UUID:
            return str(value)
        if kind is datetime.datetime:
            return self._moment(value)
        if self.plain_numbers and (kind is int or kind is float):
            text = str(value)
            if kind is int or ("e" not in text and "n" not in text):  # not 1e-05, inf, nan
                return text
        return render_value_in_context(value, self.context)

    def cell(self, value) -> str:
        """A table cell's text: as `{{ value }}` writes it, but state as people read it
        (EMPTY, YES, NO) and a dict of changes as lines, never a Python literal."""
        if value is None or value == "":
            return EMPTY
        if value is True:
            return YES
        if value is False:
            return NO
        if isinstance(value, dict):
            return change_lines(value, self.cell) if value else EMPTY
        if isinstance(value, list | tuple):
            return ", ".join(self.cell(item) for item in value) if value else EMPTY
        return self(value)

    def code(self, value) -> str:
        """A code's cell: as `cell` writes it, with a <wbr> after each "." and "_", so
        that a narrow column wraps it between its words ("schema_version." /
        "acknowledge") and never inside one ("schema_versio" / "n.acknowledge")."""
        if not isinstance(value, str) or not value:
            return self.cell(value)
        return "<wbr>".join(self(part) for part in _CODE_BREAKS.split(value))

    def _moment(self, value) -> str:
        aware = self.zone is not None and value.utcoffset() is not None
        if aware and getattr(value, "convert_to_local_time", True):
            value = value.astimezone(self.zone)
        if self.by_minute:
            # The zone is part of the key: aware datetimes compare as instants.
            minute = value.replace(second=0, microsecond=0)
            text = _written(self.moment, self.language, value.tzinfo, minute)
        else:
            written = dateformat.DateFormat(value)
            text = "".join(str(getattr(written, p)()) if char else p for char, p in self.moment)
        return html.escape(text) if self.autoescape else text
