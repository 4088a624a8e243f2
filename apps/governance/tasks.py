from datetime import timedelta

from celery import shared_task

from apps.core.jobs import periodic_job

# ------------------------------------------------------------------------ retention


@shared_task(
    scope="self",
    name="governance.periodic_retention_sweep",
    soft_time_limit=3300,
    time_limit=3600,
)
@periodic_job("governance.retention_sweep", stale_after=timedelta(hours=2))
def periodic_retention_sweep() -> dict:
    """The nightly retention sweep (beat, crontab STEWARD_RETENTION_SWEEP_CRONTAB)."""
    from apps.governance import retention_services

    sweep = retention_services.sweep_run()
    return {
        "night": sweep.night.isoformat(),
        "status": sweep.status,
        "rows_purged": sweep.results.get("rows_purged", 0),
        "purge_tasks_issued": sweep.results.get("purge_tasks", {}).get("issued_this_run", 0),
    }
