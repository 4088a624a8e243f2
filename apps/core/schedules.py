"""Is every periodic job keeping its schedule?

A job is **late** when it has not succeeded within twice its expected interval (plus a
minute): the interval of its beat schedule, or for a crontab the gap between two of
its runs. The dashboard, `/readyz` (as detail: a late job does not take a web process
out of service) and `/metrics` all read this one answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from apps.core.models import ScheduledJob

GRACE = timedelta(minutes=1)


@dataclass(frozen=True)
class JobHealth:
    name: str
    interval: timedelta
    last_started_at: datetime | None
    last_succeeded_at: datetime | None
    last_duration_ms: int | None
    last_error: str
    late: bool


def _interval(task: PeriodicTask, now: datetime) -> timedelta:
    schedule = task.schedule
    if task.interval_id:
        return schedule.run_every
    # A crontab: the gap from its next run to the one after.
    following = now + schedule.remaining_estimate(now)
    return schedule.remaining_estimate(following) + timedelta(seconds=1)


def schedule_health(now: datetime | None = None) -> list[JobHealth]:
    """Every enabled beat job, with its last runs and whether it is late. A job that
    never succeeded is late once its schedule has existed for two intervals."""
    now = now or timezone.now()
    tasks = PeriodicTask.objects.filter(enabled=True).exclude(task__startswith="celery.")
    names = [t.task for t in tasks]
    rows = list(ScheduledJob.objects.filter(Q(name__in=names) | Q(task__in=names)))
    # A task whose runs a claimed job records is read from the job's row.
    records = {job.name: job for job in rows if job.name in names}
    records |= {job.task: job for job in rows if job.task in names}
    health = []
    for task in tasks.select_related("interval", "crontab").order_by("task"):
        interval = _interval(task, now)
        record = records.get(task.task)
        succeeded = record.last_succeeded_at if record else None
        since = succeeded or task.date_changed
        health.append(
            JobHealth(
                name=task.task,
                interval=interval,
                last_started_at=record.last_started_at if record else None,
                last_succeeded_at=succeeded,
                last_duration_ms=record.last_duration_ms if record else None,
                last_error=record.last_error if record else "",
                late=since is not None and now - since > 2 * interval + GRACE,
            )
        )
    return health
