"""The chart module (apps.console.charts) on its own: what it draws for given series,
its accessible names, and the figures beside it."""

from __future__ import annotations

from apps.console.charts import LABEL_MIN, VALUE_WIDTH, WIDTH, Chart, Series, stacked_series
from tests.console.chart_figures import chart_figures


def chart(labels, *series, **fields) -> Chart:
    """A chart of `labels` and `series` ((name, values) pairs), keyed "k"."""
    return Chart(
        key="k",
        title="Waiting",
        description="What waits.",
        labels=labels,
        series=[Series(name, values) for name, values in series],
        **fields,
    )


def test_bars_draw_each_figure_once_and_label_the_svg():
    html = chart(
        ["a very long label that the bar cannot show in full", "b", "c"],
        ("done", [3, 0, 1.5]),
        ("left", [1, 2, 0]),
        links=["/a/", None, None],
    ).render()
    figures = chart_figures(html, "k")
    assert figures["b"] == {"Done": 0, "Left": 2, "Total": 2}
    assert figures["c"]["Done"] == 1.5
    assert 'href="/a/"' in html and "style=" not in html
    # A label cut short in the SVG keeps its whole text in a <title>.
    assert "a very long label that the b…" in html
    assert html.count("<rect") == 4  # no bar for a zero


def test_a_full_bar_stands_for_the_scale_given():
    [row] = chart(["x"], ("done", [50]), scale_max=100).geometry()["rows"]
    bar = row["segments"][0]["length"]
    # A short label leaves the bars the most room.
    assert bar == (WIDTH - LABEL_MIN - VALUE_WIDTH) / 2


def test_columns_and_an_empty_chart():
    geometry = chart(["10:00", "10:01", "10:02"], ("n", [0, 4, 2]), kind="columns").geometry()
    assert geometry["peak"] == 4 and [t["label"] for t in geometry["ticks"]] == [
        "10:00",
        "10:01",
        "10:02",
    ]
    html = chart([], empty="None.").render()
    assert "<svg" not in html and "None." in html


def test_the_busiest_series_are_drawn_apart_and_the_rest_summed():
    counts = {f"t{i}": {0: i, 1: 1} for i in range(7)}
    series = stacked_series(counts, [0, 1], drawn=3, rest="other topics")
    assert [s.name for s in series] == ["t6", "t5", "t4", "4 other topics"]
    assert series[-1].values == [0 + 1 + 2 + 3, 4]
