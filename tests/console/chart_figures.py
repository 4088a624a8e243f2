"""Reading a chart back out of a rendered page (apps.console.charts): its figures
table, and the numbers its SVG bars carry in their titles, so a view test compares both
with counts it queries itself."""

from __future__ import annotations

import re
from html.parser import HTMLParser


class _ChartReader(HTMLParser):
    def __init__(self, key: str):
        super().__init__(convert_charrefs=True)
        self.key = key
        self.depth = 0  # inside the chart's <figure> while > 0
        self.found = False
        self.headers: list[str] = []
        self.rows: list[list[str]] = []
        self.bar_titles: list[str] = []
        self.svg_labelled_by = ""
        self._cell: list[str] | None = None
        self._row: list[str] | None = None
        self._in_head = False
        self._rect = False
        self._title: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.depth == 0:
            if tag == "figure" and attrs.get("data-chart") == self.key:
                self.depth, self.found = 1, True
            return
        if tag == "figure":
            self.depth += 1
        elif tag == "svg":
            self.svg_labelled_by = attrs.get("aria-labelledby", "") + "|" + attrs.get("role", "")
        elif tag == "thead":
            self._in_head = True
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "rect":
            # A bar's own title, not its row's or column's (the track under it).
            self._rect = attrs.get("class", "").startswith("series-")
        elif tag == "title" and self._rect:
            self._title = []

    def handle_endtag(self, tag):
        if self.depth == 0:
            return
        if tag == "figure":
            self.depth -= 1
        elif tag == "thead":
            self._in_head = False
        elif tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            (self.headers.extend if self._in_head else self.rows.append)(self._row)
            self._row = None
        elif tag == "title" and self._title is not None:
            self.bar_titles.append("".join(self._title))
            self._title = None
        elif tag == "rect":
            self._rect = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._title is not None:
            self._title.append(data)


def chart_figures(html: str, key: str) -> dict[str, dict[str, float]]:
    """The chart's figures table as {label: {series: value}}, after checking that each
    bar of its SVG says the same number as the table and that the SVG is labelled."""
    reader = _ChartReader(key)
    reader.feed(html)
    assert reader.found, f"no chart {key!r} on the page"
    series = reader.headers[1:]
    figures: dict[str, dict[str, float]] = {}
    for row in reader.rows:
        if len(row) != len(series) + 1:
            continue  # the "nothing to show" row
        figures[row[0]] = {name: float(value) for name, value in zip(series, row[1:], strict=True)}
    if figures:
        assert reader.svg_labelled_by == f"chart-{key}-title chart-{key}-desc|img"
    drawn = {}
    for title in reader.bar_titles:
        match = re.fullmatch(r"(.*): ([\d.]+) (.*)", title)
        assert match, title
        drawn[(match[1], match[3].lower())] = float(match[2])
    for label, values in figures.items():
        for name, value in values.items():
            if name == "Total":
                continue
            # A bar is drawn for each figure above zero, and says that figure.
            assert drawn.get((label, name.lower()), 0.0) == value, (label, name, drawn)
    return figures


def column(figures: dict[str, dict[str, float]], name: str) -> dict[str, float]:
    """One series of the figures, by label."""
    return {label: values[name] for label, values in figures.items()}
