from celery import shared_task

from apps.core.tasks import RETRY_WHILE_DATABASE_DOWN


@shared_task(scope="self", name="governance.run_steward_task", **RETRY_WHILE_DATABASE_DOWN)
def run_steward_task(*, task_id: str) -> str:
    from apps.governance import work

    return work.run_steward_task(task_id=task_id)


@shared_task(scope="self", name="governance.assemble_export", **RETRY_WHILE_DATABASE_DOWN)
def assemble_export(*, order_id: str) -> str:
    from apps.governance import exports

    return exports.assemble(order_id=order_id)


@shared_task(scope="self", name="governance.periodic_advance_orders")
def periodic_advance_orders() -> dict:
    from apps.core.jobs import periodic_job
    from apps.governance import work

    return periodic_job("governance.advance_orders")(work.advance_orders)()


# ------------------------------------------------------------------------ retention


@shared_task(
    scope="self",
    name="governance.periodic_retention_sweep",
    soft_time_limit=3300,
    time_limit=3600,
)
def periodic_retention_sweep() -> dict:
    """The nightly retention sweep (beat, crontab STEWARD_RETENTION_SWEEP_CRONTAB)."""
    from datetime import timedelta

    from apps.core.jobs import periodic_job
    from apps.governance import retention_services

    def sweep() -> dict:
        done = retention_services.sweep_run()
        return {
            "night": done.night.isoformat(),
            "status": done.status,
            "rows_purged": done.results.get("rows_purged", 0),
            "purge_tasks_issued": done.results.get("purge_tasks", {}).get("issued_this_run", 0),
        }

    return periodic_job("governance.retention_sweep", stale_after=timedelta(hours=2))(sweep)()
