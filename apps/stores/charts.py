"""The stores' chart for the dashboard (reads only, row-level security choosing the
rows): store bindings by status, those flagged for a residency violation apart."""

from __future__ import annotations

from django.db.models import Count, Q
from django.urls import reverse

from apps.console.charts import Chart, Series
from apps.stores.models import StoreBinding


def bindings_by_status(*, tenant=None) -> Chart:
    bindings = StoreBinding.objects.all()
    if tenant is not None:
        bindings = bindings.filter(tenant=tenant)
    counts = {
        status: (n, flagged)
        for status, n, flagged in bindings.order_by()
        .values_list("status")
        .annotate(n=Count("id"), flagged=Count("id", filter=~Q(violation="")))
    }
    # Every status in its lifecycle order, a status without bindings too: the chart
    # reads the same from one day to the next.
    statuses = StoreBinding.Status.choices
    url = reverse("stores:binding-list")
    return Chart(
        key="bindings-by-status",
        title="Store bindings by status",
        description="Store bindings in each status; those with a residency violation apart.",
        labels=[label for _, label in statuses],
        series=[
            Series(
                "in order",
                [counts.get(s, (0, 0))[0] - counts.get(s, (0, 0))[1] for s, _ in statuses],
            ),
            Series("residency violation", [counts.get(s, (0, 0))[1] for s, _ in statuses]),
        ],
        links=[f"{url}?status={s}" for s, _ in statuses],
    )
