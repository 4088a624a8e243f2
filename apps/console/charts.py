"""Charts drawn on the server as SVG: no JavaScript, no chart library, nothing the CSP
refuses (no inline style: colours and type come from classes in static/console/steward.css,
so the dark theme recolours them).

A chart is a few labelled series of numbers. `Chart.render()` (or `{% chart %}` from the
`charts` tag library) draws it: the SVG, with a <title> and <desc> it is labelled by,
each bar's own <title>, a legend, and the same figures as a table beside it for screen
readers and for whoever wants the numbers. The apps build their charts' series in their
own `charts.py` (reads only) and this module draws them.

Two shapes:
- `bars`: one horizontal bar per label, the series stacked along it (counts by kind,
  progress: done and left);
- `columns`: one column per label along a time axis, the series stacked up it (events
  per minute).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cached_property

from django.template import Context
from django.utils.safestring import SafeString, mark_safe

from apps.console.cells import Cells

# In the SVG's own units: a dashboard card draws it about as wide, so text keeps its size.
WIDTH = 480
# Horizontal bars: the labels' column (as wide as the longest label needs, within
# bounds), then the bars, then room for the total. A character of the 15 px label is
# taken as 9 units wide: at 8, wide letters ("Consumers schema news cannot…") ran under
# the bars and hid the ellipsis that says a label was cut.
VALUE_WIDTH, ROW_HEIGHT = 56, 28
LABEL_MIN, LABEL_MAX, CHAR_WIDTH = 110, 250, 9
# Columns: room for the peak's figure on the left and the time labels beneath.
AXIS_WIDTH, AXIS_HEIGHT, COLUMNS_HEIGHT = 36, 20, 150


@dataclass(frozen=True)
class Range:
    """A time chart's span (`?range=` names it by `key`), drawn as columns `step` wide,
    each named on the axis in `tick` (strftime)."""

    key: str
    label: str
    span: timedelta
    step: timedelta
    per: str  # what a column counts, for the title: "per minute"
    last: str  # the span in the title: "last hour"
    tick: str = "%H:%M"

    @property
    def columns(self) -> int:
        return int(self.span / self.step)

    def full_label(self, start: datetime) -> str:
        """A column's whole span as a person reads it on hover and in the figures table:
        the axis's short tick repeats itself over a week (two Fridays), this does not."""
        if self.step < timedelta(minutes=30):
            return f"{start:%H:%M}"
        return f"{start:%a %-d %b %H:%M}–{start + self.step:%H:%M}"

    def start_of(self, moment: datetime) -> datetime:
        """The start of the column holding `moment`: aligned on `step` from midnight
        UTC, as PostgreSQL's date_bin(step, t, EPOCH) bins it."""
        step = self.step.total_seconds()
        return EPOCH + timedelta(seconds=(moment - EPOCH).total_seconds() // step * step)

    def buckets(self, now: datetime | None = None) -> list[datetime]:
        """The columns' starts, oldest first, the last one holding `now`."""
        last = self.start_of(now or datetime.now(UTC))
        return [last - self.step * n for n in range(self.columns - 1, -1, -1)]


# The origin the time buckets are aligned on (PostgreSQL's date_bin takes it too).
EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
HOUR = Range("1h", "1 h", timedelta(hours=1), timedelta(minutes=1), "per minute", "last hour")
DAY = Range(
    "24h", "24 h", timedelta(hours=24), timedelta(minutes=30), "per 30 minutes", "last 24 hours"
)
WEEK = Range(
    "7d", "7 d", timedelta(days=7), timedelta(hours=4), "per 4 hours", "last 7 days", "%a %H:%M"
)
RANGES = (HOUR, DAY, WEEK)


def chosen_range(request, offered: tuple[Range, ...] = RANGES) -> Range:
    """The range the page's address asks for (`?range=24h`), among those the chart has
    data for; the first (the last hour) when it asks for none or another. Kept in the
    address, not the session: a link to the page shows what its sender saw."""
    asked = request.GET.get("range")
    return next((r for r in offered if r.key == asked), offered[0])


def range_links(request, offered: tuple[Range, ...], chosen: Range) -> list[dict]:
    """The chart's range switch: each offered range's link (the page's other parameters
    kept), the chosen one marked current."""
    if len(offered) < 2:
        return []
    query = request.GET.copy()
    links = []
    for r in offered:
        query["range"] = r.key
        links.append({"label": r.label, "url": f"?{query.urlencode()}", "current": r == chosen})
    return links


@dataclass(frozen=True)
class Series:
    name: str
    values: list[float]


@dataclass(frozen=True)
class Chart:
    """`key` names the chart on its page (element ids); `labels` are the bars or the
    columns, in order; each series has one value per label."""

    key: str
    title: str
    description: str
    labels: list[str]
    series: list[Series]
    kind: str = "bars"
    unit: str = ""
    empty: str = "Nothing to show yet."
    # Optional per label: a link for the figures table.
    links: list[str | None] = field(default_factory=list)
    # The value a full bar stands for (100 for percentages); the largest total if None.
    scale_max: float | None = None
    # A line under the chart: what it leaves out, or where the figures come from.
    footnote: str = ""
    # Each label written out in full, when the axis names it short (a time column's
    # tick): the pointer and the figures table read these; none, the labels themselves.
    full_labels: list[str] = field(default_factory=list)

    @cached_property  # read per label while drawing: once, not once a label
    def totals(self) -> list[float]:
        return [sum(s.values[i] for s in self.series) for i in range(len(self.labels))]

    @property
    def is_empty(self) -> bool:
        return not self.labels

    @property
    def whole_labels(self) -> list[str]:
        return self.full_labels or self.labels

    def rows(self) -> list[dict]:
        """The figures table: one row per label, a cell per series, and its total."""
        links = self.links or [None] * len(self.labels)
        return [
            {
                "label": label,
                "link": links[i],
                "values": [_figure(s.values[i]) for s in self.series],
                "total": _figure(total),
            }
            for i, (label, total) in enumerate(zip(self.whole_labels, self.totals, strict=True))
        ]

    def geometry(self) -> dict:
        return _columns(self) if self.kind == "columns" else _bars(self)

    def render(self) -> SafeString:
        # Written here in one pass, the frame too: through the template language, the
        # repeated parts (a column or bar per label, a table row per label) were a third
        # of the eventing overview's time, and the frame around them (a template of its
        # own until then) a tenth. Each value goes through Cells, so the text is what
        # `{{ }}` would write: tests/console/test_charts.py holds the HTML to the
        # template it replaced.
        write = Cells(Context())
        key = write(self.key)
        several = len(self.series) > 1
        legend = ""
        if several:
            swatches = "".join(
                f'<span><span class="swatch series-{n}" aria-hidden="true"></span>'
                f"{write(s.name)}</span>"
                for n, s in enumerate(self.series)
            )
            legend = f'<span class="legend">{swatches}</span>'
        footnote = (
            f'<small class="muted chart-footnote">{write(self.footnote)}</small>'
            if self.footnote
            else ""
        )
        heads = "".join(f'<th scope="col">{write(_capfirst(s.name))}</th>' for s in self.series)
        total = '<th scope="col">Total</th>' if several else ""
        of = "Time" if self.kind == "columns" else "Of"
        drawn = (
            f'<p class="muted chart-empty">{write(self.empty)}</p>'
            if self.is_empty
            else self._svg(key, write)
        )
        return mark_safe(  # noqa: S308 - every value above went through Cells
            f'\n<figure class="chart chart-{write(self.kind)}" id="chart-{key}"'
            f' data-chart="{key}">\n{drawn}\n'
            f"<figcaption>{legend}\n{footnote}\n"
            f'<details class="chart-figures"><summary>Figures: {write(self.title)}</summary>\n'
            '<div class="overflow-auto" tabindex="0"><table class="striped">\n'
            f'<thead><tr><th scope="col">{of}</th>{heads}{total}</tr></thead>\n'
            f"<tbody>{self._figures(write)}</tbody>\n"
            "</table></div></details></figcaption>\n</figure>\n"
        )

    def _svg(self, key: str, write) -> str:
        g = self.geometry()
        width, height = write(g["width"]), write(g["height"])
        if self.kind == "columns":
            plot, axis = write(g["plot_height"]), write(g["axis_x"])
            tick_x, tick_y = write(g["axis_x"] - 4), write(g["height"] - 3)
            ticks = "".join(
                f'<text class="tick" x="{write(t["x"])}" y="{tick_y}"'
                f' text-anchor="{write(t["anchor"])}">{write(t["label"])}</text>'
                for t in g["ticks"]
            )
            drawing = (
                f'\n<line class="axis" x1="{axis}" y1="{plot}" x2="{width}" y2="{plot}"></line>\n'
                f'<line class="grid" x1="{axis}" y1="0.5" x2="{width}" y2="0.5"></line>\n'
                f'<text class="tick" x="{tick_x}" y="10" text-anchor="end">'
                f"{write(g['peak'])}</text>\n"
                f'<text class="tick" x="{tick_x}" y="{plot}" text-anchor="end">0</text>\n'
                f"{_columns_svg(g, write)}\n{ticks}\n"
            )
        else:
            axis = write(g["axis_x"])
            drawing = (
                f"\n{_rows_svg(g, self.unit, write)}\n"
                f'<line class="axis" x1="{axis}" y1="0" x2="{axis}" y2="{height}"></line>\n'
            )
        return (
            f'\n<svg viewBox="0 0 {width} {height}" width="{width}" height="{height}"'
            f' role="img" aria-labelledby="chart-{key}-title chart-{key}-desc"'
            ' preserveAspectRatio="xMinYMin meet">\n'
            f'<title id="chart-{key}-title">{write(self.title)}</title>\n'
            f'<desc id="chart-{key}-desc">{write(self.description)}</desc>\n'
            f"{drawing}\n</svg>"
        )

    def _figures(self, write) -> str:
        rows = self.rows()
        if not rows:
            return f'<tr><td colspan="{len(self.series) + 2}">{write(self.empty)}</td></tr>'
        several = len(self.series) > 1
        written = []
        for row in rows:
            label = write(row["label"])
            if row["link"]:
                label = f'<a href="{write(row["link"])}">{label}</a>'
            cells = "".join(f"<td>{write(v)}</td>" for v in row["values"])
            total = f"<td>{write(row['total'])}</td>" if several else ""
            written.append(f'<tr><th scope="row">{label}</th>{cells}{total}</tr>\n')
        return "".join(written)


def stacked_series(
    counts: dict[str, dict], buckets: list, *, drawn: int = 5, rest: str = "other"
) -> list[Series]:
    """A series per name of `counts` ({name: {bucket: n}}) over `buckets`, the `drawn`
    largest apart and the others summed into one: more series than colours tell apart
    would draw nothing readable."""
    ranked = sorted(counts, key=lambda name: (-sum(counts[name].values()), name))
    series = [Series(name, [counts[name].get(b, 0) for b in buckets]) for name in ranked[:drawn]]
    others = ranked[drawn:]
    if others:
        series.append(
            Series(
                f"{len(others)} {rest}",
                [sum(counts[name].get(b, 0) for name in others) for b in buckets],
            )
        )
    return series


def _capfirst(name: str) -> str:
    # The template language's capfirst
    return name and name[0].upper() + name[1:]


def _figure(value: float) -> float | int:
    return int(value) if float(value).is_integer() else round(value, 1)


def _segments(chart: Chart, index: int, scale: float) -> list[dict]:
    """One label's stacked pieces, in series order, with their lengths."""
    pieces, start = [], 0.0
    for number, s in enumerate(chart.series):
        length = s.values[index] * scale
        if length > 0:
            pieces.append(
                {
                    "series": number,
                    "start": round(start, 2),
                    "length": round(max(length, 0.5), 2),
                    "title": f"{chart.whole_labels[index]}: {_figure(s.values[index])} {s.name}",
                }
            )
        start += length
    return pieces


def _label_width(labels: list[str]) -> int:
    longest = max((len(label) for label in labels), default=0)
    return min(max(longest * CHAR_WIDTH + 12, LABEL_MIN), LABEL_MAX)


def _columns_svg(g: dict, write) -> str:
    height = write(g["plot_height"])
    return "".join(
        f'<rect class="track" x="{write(c["x"])}" y="0" width="{write(c["width"])}"'
        f' height="{height}"><title>{write(c["title"])}</title></rect>'
        + "".join(
            f'<rect class="series-{write(s["series"])}" x="{write(s["x"])}" y="{write(s["y"])}"'
            f' width="{write(s["width"])}" height="{write(s["length"])}">'
            f"<title>{write(s['title'])}</title></rect>"
            for s in c["segments"]
        )
        for c in g["columns"]
    )


def _rows_svg(g: dict, unit: str, write) -> str:
    written = []
    for row in g["rows"]:
        label, y = write(row["label"]), write(row["y"])
        text_y, height = write(row["text_y"]), write(row["height"])
        # The whole row answers a pointer with its full label and figure, the label too:
        # a label cut to fit stays readable on hover (and whole in the figures table).
        track = (
            f'<rect class="track" x="0" y="{write(row["top"])}" width="{write(row["width"])}"'
            f' height="{write(ROW_HEIGHT)}">'
            f"<title>{write(row['title'])}{write(unit)}</title></rect>"
        )
        title = f"<title>{write(row['full_label'])}</title>"
        bars = "".join(
            f'<rect class="series-{write(s["series"])}" x="{write(s["x"])}" y="{y}"'
            f' width="{write(s["length"])}" height="{height}"><title>{write(s["title"])}</title>'
            "</rect>"
            for s in row["segments"]
        )
        written.append(
            f'<g>{track}<text class="label" x="0" y="{text_y}">{label}{title}</text>\n{bars}\n'
            f'<text class="value" x="{write(row["value_x"])}" y="{text_y}">'
            f"{write(row['total'])}{write(unit)}</text></g>"
        )
    return "".join(written)


def _bars(chart: Chart) -> dict:
    peak = chart.scale_max or max(chart.totals, default=0) or 1
    label_width = _label_width(chart.labels)
    chars = (label_width - 12) // CHAR_WIDTH
    span = WIDTH - label_width - VALUE_WIDTH
    rows = []
    for i, label in enumerate(chart.labels):
        top = i * ROW_HEIGHT
        short = label if len(label) <= chars else label[: chars - 1] + "…"
        segments = _segments(chart, i, span / peak)
        rows.append(
            {
                "top": top,
                "width": WIDTH,
                "title": f"{label}: {_figure(chart.totals[i])}",
                "y": top + 4,
                "text_y": top + ROW_HEIGHT / 2 + 5,
                "height": ROW_HEIGHT - 8,
                "label": short,
                "full_label": label,
                "segments": [{**s, "x": round(label_width + s["start"], 2)} for s in segments],
                "value_x": round(label_width + sum(s["length"] for s in segments) + 6, 2),
                "total": _figure(chart.totals[i]),
            }
        )
    return {
        "width": WIDTH,
        "height": max(len(rows), 1) * ROW_HEIGHT,
        "rows": rows,
        "axis_x": label_width,
    }


def _columns(chart: Chart) -> dict:
    peak = max(chart.totals, default=0) or 1
    plot_height = COLUMNS_HEIGHT - AXIS_HEIGHT
    count = max(len(chart.labels), 1)
    step = (WIDTH - AXIS_WIDTH) / count
    columns = []
    for i, label in enumerate(chart.whole_labels):
        x = AXIS_WIDTH + i * step
        segments = [
            {
                **s,
                "x": round(x, 2),
                "y": round(plot_height - s["start"] - s["length"], 2),
                "width": round(max(step - 1, 0.5), 2),
            }
            for s in _segments(chart, i, plot_height / peak)
        ]
        columns.append(
            {
                "label": label,
                "x": round(x, 2),
                "width": round(max(step - 1, 0.5), 2),
                # The whole column answers a pointer, a short one too.
                "title": f"{label}: {_figure(chart.totals[i])} in all",
                "segments": segments,
            }
        )
    # Time labels at the start, the middle and the end: enough to read the axis by.
    ticks = sorted({0, count // 2, count - 1}) if chart.labels else []
    return {
        "width": WIDTH,
        "height": COLUMNS_HEIGHT,
        "plot_height": plot_height,
        "columns": columns,
        "axis_x": AXIS_WIDTH,
        "peak": _figure(peak if any(chart.totals) else 0),
        "ticks": [
            {
                "x": round(
                    AXIS_WIDTH
                    if i == 0
                    else WIDTH
                    if i == count - 1
                    else AXIS_WIDTH + (i + 0.5) * step,
                    2,
                ),
                "label": chart.labels[i],
                "anchor": "start" if i == 0 else ("end" if i == count - 1 else "middle"),
            }
            for i in ticks
        ],
    }
