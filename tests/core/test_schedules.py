"""Schedule lateness: on /readyz, on /metrics and on the operator's dashboard; every
installed schedule's due time and lateness around its run, with a frozen clock."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from apps.core import setup
from apps.core.models import ScheduledJob
from apps.core.schedules import (
    GRACE,
    LONGEST_ALLOWANCE,
    describe_crontab,
    next_run,
    schedule_health,
)

# A fixed morning far from the wall clock: a computation that read the real time
# instead of the crontab would answer differently here.
LAST_SUCCESS = datetime(2026, 3, 10, 2, 30, 20, tzinfo=UTC)


@pytest.mark.django_db
def test_a_job_that_has_not_succeeded_within_twice_its_interval_is_late(client, operator, scrape):
    every_minute = IntervalSchedule.objects.get_or_create(every=1, period="minutes")[0]
    PeriodicTask.objects.create(name="tests.job", task="tests.periodic_job", interval=every_minute)
    ScheduledJob.objects.create(
        name="tests.periodic_job", last_succeeded_at=timezone.now() - timedelta(seconds=90)
    )
    [job] = [j for j in schedule_health() if j.name == "tests.periodic_job"]
    assert not job.late
    ScheduledJob.objects.filter(name="tests.periodic_job").update(
        last_succeeded_at=timezone.now() - timedelta(minutes=4), last_error="ValueError: boom"
    )
    [job] = [j for j in schedule_health() if j.name == "tests.periodic_job"]
    assert job.late
    ready = client.get("/readyz").json()
    assert {j["job"] for j in ready["late_schedules"]} >= {"tests.periodic_job"}
    assert scrape()['steward_schedule_late{job="tests.periodic_job"}'] == 1
    client.force_login(operator)
    page = client.get("/").content.decode()
    assert "tests.periodic_job" in page and "ValueError: boom" in page
    assert "every minute" in page


@pytest.mark.django_db
def test_a_task_whose_runs_a_claimed_job_records_is_read_from_the_jobs_row():
    every_minute = IntervalSchedule.objects.get_or_create(every=1, period="minutes")[0]
    PeriodicTask.objects.create(
        name="tests.sweep", task="tests.periodic_sweep", interval=every_minute
    )
    ScheduledJob.objects.create(
        name="tests.sweep", task="tests.periodic_sweep", last_succeeded_at=timezone.now()
    )
    [job] = [j for j in schedule_health() if j.name == "tests.periodic_sweep"]
    assert job.last_succeeded_at is not None and not job.late


def _installed() -> list[PeriodicTask]:
    setup.install_schedules(setup.SetupReport())
    tasks = PeriodicTask.objects.filter(enabled=True).exclude(task__startswith="celery.")
    return list(tasks.select_related("interval", "crontab"))


def _fires(row: CrontabSchedule, at: datetime) -> bool:
    """Whether the crontab names this minute, read field by field from celery's sets."""
    cron = row.schedule
    return (
        at.minute in cron.minute
        and at.hour in cron.hour
        and at.day in cron.day_of_month
        and at.month in cron.month_of_year
        and at.isoweekday() % 7 in cron.day_of_week
    )


@pytest.mark.django_db
def test_every_installed_schedule_is_due_when_its_schedule_says():
    tasks = _installed()
    assert any(t.crontab_id for t in tasks) and any(t.interval_id for t in tasks)
    for task in tasks:
        due = next_run(task, LAST_SUCCESS)
        if task.interval_id:
            assert due - LAST_SUCCESS == task.schedule.run_every, task.task
            continue
        # The first minute after the last success that the crontab names, walked to.
        minute = LAST_SUCCESS.replace(second=0, microsecond=0) + timedelta(minutes=1)
        while not _fires(task.crontab, minute):
            minute += timedelta(minutes=1)
        assert due == minute, task.task


@pytest.mark.django_db
def test_every_installed_schedule_is_late_only_once_its_due_run_is_overdue(monkeypatch):
    tasks = _installed()
    ScheduledJob.objects.bulk_create(
        ScheduledJob(name=t.task, last_succeeded_at=LAST_SUCCESS) for t in tasks
    )
    for task in tasks:
        due = next_run(task, LAST_SUCCESS)
        deadline = due + min(next_run(task, due) - due, LONGEST_ALLOWANCE) + GRACE
        expected = {
            due - timedelta(seconds=1): False,  # just before its run
            due: False,  # at its run
            due + timedelta(seconds=1): False,  # just after, running
            deadline: False,
            deadline + timedelta(seconds=1): True,  # the run never succeeded
        }
        for now, late in expected.items():
            monkeypatch.setattr(timezone, "now", lambda now=now: now)
            [job] = [j for j in schedule_health() if j.name == task.task]
            assert (job.due_at, job.late) == (due, late), (task.task, now)
        # The run succeeded just after its time: on time again, due at the next one.
        ScheduledJob.objects.filter(name=task.task).update(last_succeeded_at=due + GRACE / 2)
        later = deadline + timedelta(seconds=1)
        [job] = [j for j in schedule_health(now=later) if j.name == task.task]
        assert not job.late and job.due_at == next_run(task, due + GRACE / 2)


@pytest.mark.django_db
def test_the_nightly_sweep_is_on_time_all_evening_and_late_an_hour_after_a_missed_run(settings):
    [sweep] = [t for t in _installed() if t.task == "governance.periodic_retention_sweep"]
    assert settings.STEWARD_RETENTION_SWEEP_CRONTAB == "30 2 * * *"
    ScheduledJob.objects.create(name=sweep.task, last_succeeded_at=LAST_SUCCESS)

    def late_at(hour: int, minute: int, day: int = 11) -> bool:
        now = datetime(2026, 3, day, hour, minute, tzinfo=UTC)
        [job] = [j for j in schedule_health(now=now) if j.name == sweep.task]
        assert job.schedule == "daily at 02:30 UTC"
        assert job.due_at == datetime(2026, 3, 11, 2, 30, tzinfo=UTC)
        return job.late

    assert not late_at(20, 0, day=10) and not late_at(23, 59, day=10)
    assert not late_at(2, 30) and not late_at(3, 31)
    assert late_at(3, 32) and late_at(20, 0)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        (("30", "2", "*", "*", "*"), "daily at 02:30 UTC"),
        (("*/5", "*", "*", "*", "*"), "every 5 minutes"),
        (("*", "*", "*", "*", "*"), "every minute"),
        (("15", "*", "*", "*", "*"), "hourly at :15"),
        (("0", "6", "*", "*", "1,3"), "Monday and Wednesday at 06:00 UTC"),
        (("0", "6", "1", "*", "*"), "cron 0 6 1 * * (UTC)"),
    ],
)
def test_a_crontab_reads_as_people_write_it(fields, words):
    minute, hour, day_of_month, month_of_year, day_of_week = fields
    row = CrontabSchedule(
        minute=minute,
        hour=hour,
        day_of_month=day_of_month,
        month_of_year=month_of_year,
        day_of_week=day_of_week,
        timezone="UTC",
    )
    assert describe_crontab(row) == words


@pytest.mark.django_db
def test_installed_intervals_read_as_people_write_them():
    _installed()
    words = {job.name: job.schedule for job in schedule_health()}
    assert words["eventing.periodic_sweep_outbox"] == "every 5 seconds"
    assert words["attention.periodic_scan"] == "every minute"
    assert words["assets.periodic_reconcile_workflows"] == "every 15 minutes"
    assert words["compute.periodic_resolve_orphan_links"] == "every hour"
