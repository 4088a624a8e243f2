"""Governance's Celery tasks (the only "tasks" of that meaning in governance: an owner
task is a GovernanceTask). Thin: each calls one service; the names are beat's rows."""

from datetime import timedelta

from celery import shared_task

from apps.core.jobs import periodic_job
from apps.core.tasks import RETRY_WHILE_DATABASE_DOWN
from apps.governance.orders import exports
from apps.governance.retention import services as retention
from apps.governance.steward_owner import services as steward_owner


@shared_task(scope="self", name="governance.run_steward_task", **RETRY_WHILE_DATABASE_DOWN)
def run_steward_task(*, task_id: str) -> str:
    return steward_owner.owner_task_run(task_id=task_id)


@shared_task(scope="self", name="governance.assemble_export", **RETRY_WHILE_DATABASE_DOWN)
def assemble_export(*, order_id: str) -> str:
    return exports.export_archive_assemble(order_id=order_id)


@shared_task(scope="self", name="governance.periodic_advance_orders")
def periodic_advance_orders() -> dict:
    """The minute's round: orders, then the purge tasks retired bindings are owed."""
    return periodic_job("governance.advance_orders")(retention.advance_round)()


# ------------------------------------------------------------------------ retention


def _sweep_tonight() -> dict:
    done = retention.sweep_run()
    return {
        "night": done.night.isoformat(),
        "status": done.status,
        "rows_purged": done.results.get("rows_purged", 0),
        "purge_tasks_issued": done.results.get("purge_tasks", {}).get("issued_this_run", 0),
    }


@shared_task(scope="self", name="governance.periodic_sweep_own_tables")
def periodic_sweep_own_tables() -> dict:
    """Hourly: Steward's own tables under the retention rules naming their classes."""
    return periodic_job("governance.sweep_own_tables")(retention.own_tables_sweep_now)()


@shared_task(
    scope="self",
    name="governance.periodic_retention_sweep",
    soft_time_limit=3300,
    time_limit=3600,
)
def periodic_retention_sweep() -> dict:
    """The nightly retention sweep (beat, crontab STEWARD_RETENTION_SWEEP_CRONTAB)."""
    return periodic_job("governance.retention_sweep", stale_after=timedelta(hours=2))(
        _sweep_tonight
    )()
