"""Is every periodic job keeping its schedule?

A run is **due** at the first time the schedule names after the job's last success
(or, for a job that never succeeded, after its schedule was last changed): for an
interval schedule one interval after it, for a crontab its next fire time computed
from the crontab's own fields, never from the wall clock. The job is **late** when a
due run has not succeeded within an allowance: the gap from that due time to the run
after it (one interval, or the crontab's own next gap), capped at `LONGEST_ALLOWANCE`
so that a nightly job missed at 02:30 is reported that night, not the next, plus a
minute's grace. The dashboard, `/readyz` (as detail: a late job does not take a web
process out of service) and `/metrics` all read this one answer.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Q
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from apps.core.models import ScheduledJob

GRACE = timedelta(minutes=1)
# The longest a due run may take to succeed before it is late, whatever its schedule:
# a nightly sweep that has not finished an hour after its time is worth a look.
LONGEST_ALLOWANCE = timedelta(hours=1)


@dataclass(frozen=True)
class JobHealth:
    name: str
    # The schedule as people write it: "every 5 minutes", "daily at 02:30 UTC".
    schedule: str
    due_at: datetime
    last_started_at: datetime | None
    last_succeeded_at: datetime | None
    last_duration_ms: int | None
    last_error: str
    late: bool


def next_run(task: PeriodicTask, after: datetime) -> datetime:
    """The first time strictly after `after` at which the task's schedule runs it."""
    if task.interval_id:
        return after + task.schedule.run_every
    # remaining_delta measures from `after` alone (its third value, the wall clock's
    # now, is what remaining_estimate would subtract, and is not used here).
    start, delta, _ = task.crontab.schedule.remaining_delta(after)
    return start + delta


def describe(task: PeriodicTask) -> str:
    """A task's schedule in the words an operator would use."""
    if task.interval_id:
        return describe_interval(task.interval)
    return describe_crontab(task.crontab)


def describe_interval(interval: IntervalSchedule) -> str:
    unit = interval.period.rstrip("s")
    if interval.every == 1:
        return f"every {unit}"
    return f"every {interval.every} {unit}s"


_DAYS = {
    "0": "Sunday",
    "1": "Monday",
    "2": "Tuesday",
    "3": "Wednesday",
    "4": "Thursday",
    "5": "Friday",
    "6": "Saturday",
    "7": "Sunday",
}


def describe_crontab(row: CrontabSchedule) -> str:
    minute, hour = row.minute, row.hour
    tz = str(row.timezone)
    dates = (row.day_of_month, row.month_of_year)
    every_day = dates == ("*", "*") and row.day_of_week == "*"
    if every_day and hour == "*" and minute == "*":
        return "every minute"
    if every_day and hour == "*" and minute.startswith("*/") and minute[2:].isdigit():
        return f"every {int(minute[2:])} minutes"
    if every_day and hour == "*" and minute.isdigit():
        return f"hourly at :{int(minute):02d}"
    if minute.isdigit() and hour.isdigit() and dates == ("*", "*"):
        at = f"at {int(hour):02d}:{int(minute):02d} {tz}"
        if every_day:
            return f"daily {at}"
        days = [_DAYS.get(day.strip()) for day in row.day_of_week.split(",")]
        if all(days):
            return f"{_join(days)} {at}"
    return f"cron {minute} {hour} {row.day_of_month} {row.month_of_year} {row.day_of_week} ({tz})"


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} and {words[-1]}"


def lateness(task: PeriodicTask, since: datetime, now: datetime) -> tuple[datetime, bool]:
    """When the run after `since` was due, and whether it is late at `now`."""
    due = next_run(task, since)
    allowance = min(next_run(task, due) - due, LONGEST_ALLOWANCE)
    return due, now > due + allowance + GRACE


def schedule_health(now: datetime | None = None) -> list[JobHealth]:
    """Every enabled beat job, with its last runs and whether it is late."""
    now = now or timezone.now()
    tasks = PeriodicTask.objects.filter(enabled=True).exclude(task__startswith="celery.")
    names = [t.task for t in tasks]
    rows = list(ScheduledJob.objects.filter(Q(name__in=names) | Q(task__in=names)))
    # A task whose runs a claimed job records is read from the job's row.
    records = {job.name: job for job in rows if job.name in names}
    records |= {job.task: job for job in rows if job.task in names}
    health = []
    for task in tasks.select_related("interval", "crontab").order_by("task"):
        record = records.get(task.task)
        succeeded = record.last_succeeded_at if record else None
        due, late = lateness(task, succeeded or task.date_changed, now)
        health.append(
            JobHealth(
                name=task.task,
                schedule=describe(task),
                due_at=due,
                last_started_at=record.last_started_at if record else None,
                last_succeeded_at=succeeded,
                last_duration_ms=record.last_duration_ms if record else None,
                last_error=record.last_error if record else "",
                late=late,
            )
        )
    return health
