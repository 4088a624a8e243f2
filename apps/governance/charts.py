"""Governance's charts (reads only, in the caller's scope; drawn by apps.console.charts):
orders in flight with their progress for the dashboard, and the retention sweep's rows
by table and rule, last night's and tonight's, for the retention pages."""

from __future__ import annotations

from apps.console.charts import Chart, Series
from apps.governance.models import GovernanceOrder
from apps.governance.orders.selectors import order_list, order_percent_done

SHOWN = 10
IN_FLIGHT = (
    GovernanceOrder.Status.APPROVED,
    GovernanceOrder.Status.RUNNING,
    GovernanceOrder.Status.OVERDUE,
)


def orders_in_flight() -> Chart:
    """The oldest orders approved and not finished, each with its share done (phases
    done, and the current phase's tasks completed; apps.governance.orders.selectors)."""
    orders = list(order_list().filter(status__in=IN_FLIGHT).order_by("created_at", "id")[:SHOWN])
    return Chart(
        key="orders-in-flight",
        title="Governance orders in flight",
        description="Approved deletion and export orders not finished yet, with the share done.",
        labels=[
            f"{order.get_kind_display().removeprefix('Tenant ').capitalize()} of "
            f"{order.tenant.slug} · {order.get_status_display().lower()} · {str(order.pk)[:8]}"
            for order in orders
        ],
        series=[Series("done", [order_percent_done(order) for order in orders])],
        links=[order.get_absolute_url() for order in orders],
        unit="%",
        scale_max=100,
        empty="No order is in flight.",
    )


def sweep_rows(tables: dict, *, key: str, title: str, description: str, empty: str) -> Chart:
    """Rows by table and the rule that decides it: `tables` maps a table's label to its
    `rule` and `rows` (a sweep's results, or tonight's preview reshaped alike)."""
    ordered = sorted(tables.items(), key=lambda item: (-int(item[1].get("rows") or 0), item[0]))
    return Chart(
        key=key,
        title=title,
        description=description,
        labels=[f"{label} · {entry.get('rule') or 'no rule'}" for label, entry in ordered],
        series=[Series("rows", [int(entry.get("rows") or 0) for _, entry in ordered])],
        empty=empty,
    )


def last_sweep_rows(sweep) -> Chart:
    return sweep_rows(
        (sweep.results or {}).get("tables", {}) if sweep else {},
        key="last-sweep",
        title=f"Last sweep ({sweep.night}): rows purged by table and rule"
        if sweep
        else "Last sweep: rows purged by table and rule",
        description="Rows the last retention sweep removed from each of Steward's tables.",
        empty="No sweep has run yet.",
    )


def preview_rows(preview: dict) -> Chart:
    tables = {
        t["table"]: {"rule": t.get("rule"), "rows": t.get("rows")}
        for t in preview.get("own_tables", [])
        if t.get("action")
    }
    return sweep_rows(
        tables,
        key="tonight-sweep",
        title="Tonight's sweep: rows it would purge by table and rule",
        description="Rows tonight's retention sweep would remove from each of Steward's tables.",
        empty="Tonight's sweep would purge no row of Steward's tables.",
    )
