"""The attention queue's chart for the dashboard (reads only): what waits on a person,
by kind, dead letters among them (apps.attention.selectors.counts, one count a kind)."""

from __future__ import annotations

from django.urls import reverse

from apps.attention import selectors
from apps.console.charts import Chart, Series
from apps.core.attention import kinds


def waiting_by_kind() -> Chart:
    counts = selectors.counts()
    shown = [(slug, kind) for slug, kind in kinds().items()]
    queue = reverse("attention:queue")
    return Chart(
        key="attention-by-kind",
        title="Dead letters and attention items",
        description="What waits on a person now, by kind, as the attention queue lists it.",
        labels=[kind.title for _, kind in shown],
        series=[Series("waiting", [counts[slug] for slug, _ in shown])],
        links=[f"{queue}?kind={slug}" for slug, _ in shown],
    )
