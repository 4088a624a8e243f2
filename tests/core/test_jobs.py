"""Periodic jobs stay correct under two beats, a dead runner and a run that overstayed."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.core.jobs import SKIPPED, claim_job, periodic_job, release_job
from apps.core.models import ScheduledJob


@pytest.mark.django_db(transaction=True)
def test_a_periodic_job_fired_by_two_beats_at_once_runs_once():
    inside, release = threading.Event(), threading.Event()
    runs = []

    @periodic_job("tests.slow_job")
    def slow_job():
        runs.append(1)
        inside.set()
        release.wait(timeout=30)
        return "done"

    results = []

    def fire():
        results.append(slow_job())
        connection.close()

    first = threading.Thread(target=fire)
    first.start()
    assert inside.wait(timeout=30)
    second = threading.Thread(target=fire)  # the other beat fires while the first still runs
    second.start()
    second.join(timeout=30)
    release.set()
    first.join(timeout=30)
    assert sorted(results) == ["done", SKIPPED]
    assert len(runs) == 1
    job = ScheduledJob.objects.get(name="tests.slow_job")
    assert job.running_since is None
    assert job.last_succeeded_at is not None and job.last_duration_ms is not None


@pytest.mark.django_db(transaction=True)
def test_a_job_whose_runner_died_is_taken_over_after_it_goes_stale():
    ScheduledJob.objects.create(
        name="tests.dead", running_since=timezone.now() - timedelta(hours=1)
    )

    @periodic_job("tests.dead", stale_after=timedelta(minutes=15))
    def job():
        return "ran"

    assert job() == "ran"


@pytest.mark.django_db(transaction=True)
def test_a_run_that_overstayed_does_not_release_the_claim_of_the_run_that_took_over():
    stale = timedelta(seconds=0)
    first = claim_job("tests.overstay", stale_after=timedelta(hours=1))
    second = claim_job("tests.overstay", stale_after=stale)  # took over the stale claim
    assert first is not None and second is not None and second != first
    release_job("tests.overstay", claimed_at=first, started=0.0)  # the slow first run ends
    job = ScheduledJob.objects.get(name="tests.overstay")
    assert job.running_since == second  # still held by the second run
