"""Schedule lateness: on /readyz, on /metrics and on the operator's dashboard."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from apps.core.models import ScheduledJob
from apps.core.schedules import schedule_health


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
