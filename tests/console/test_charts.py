"""The chart module (apps.console.charts) on its own: what it draws for given series,
its accessible names, and the figures beside it."""

from __future__ import annotations

from pathlib import Path

from django.template import engines
from hypothesis import given, settings
from hypothesis import strategies as st

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
    # A label cut short in the SVG keeps its whole text in a <title>, on the label and
    # on its whole row (the figures table has it whole too: chart_figures read it).
    assert "a very long label that th…" in html
    full = "a very long label that the bar cannot show in full"
    assert f"<title>{full}</title>" in html and f"<title>{full}: 4</title>" in html
    assert "<title>b</title>" in html  # every label, cut or not
    assert html.count('<rect class="series-') == 4  # no bar for a zero
    assert html.count('<rect class="track"') == 3  # a row each answers a pointer


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


_text = st.text(alphabet="ab <>&\"'é…_", max_size=40) | st.just(
    "a label longer than any bar can show"
)
_number = st.one_of(
    st.integers(0, 10**6), st.floats(0, 10**6, allow_nan=False), st.sampled_from([0, 0.0, 0.5])
)


@st.composite
def _charts(draw):
    labels = draw(st.lists(_text, max_size=14))
    names = draw(st.lists(_text, min_size=1, max_size=4))
    series = [
        Series(n, draw(st.lists(_number, min_size=len(labels), max_size=len(labels))))
        for n in names
    ]
    links = draw(
        st.one_of(
            st.just([]),
            st.lists(st.one_of(st.none(), _text), min_size=len(labels), max_size=len(labels)),
        )
    )
    return Chart(
        key=draw(st.sampled_from(["k", "lag-per-consumer"])),
        title=draw(_text),
        description=draw(_text),
        labels=labels,
        series=series,
        kind=draw(st.sampled_from(["bars", "columns"])),
        unit=draw(st.sampled_from(["", "%", " ms"])),
        links=links,
        scale_max=draw(st.one_of(st.none(), st.just(100))),
        footnote=draw(st.one_of(st.just(""), _text)),
    )


@settings(max_examples=300, deadline=None)
@given(drawn=_charts())
def test_a_chart_is_drawn_exactly_as_the_template_language_drew_it(drawn):
    """Chart.render writes its columns, bars and figures in Python; the page is the one
    the template language wrote from the chart's geometry before (kept as a reference)."""
    reference = (Path(__file__).parent / "reference" / "chart_before_python_loops.html").read_text()
    expected = (
        engines["django"].from_string(reference).render({"chart": drawn, "g": drawn.geometry()})
    )
    assert drawn.render() == expected
