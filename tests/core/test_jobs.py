"""Periodic jobs stay correct under two beats, a dead runner and a run that overstayed."""

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from apps.core.jobs import SKIPPED, claim_job, periodic_job, record_run, release_job
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


@pytest.mark.django_db(transaction=True)
def test_a_run_whose_connection_died_is_taken_over_at_once_not_after_it_goes_stale():
    """A SIGKILLed worker or a PostgreSQL crash leaves the claim recorded; the lock went
    with the dead run's connection, so the next beat's run goes ahead."""
    inside, release = threading.Event(), threading.Event()
    backends, outcomes = [], []

    @periodic_job("tests.killed", stale_after=timedelta(hours=1))
    def job():
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            backends.append(cursor.fetchone()[0])
        inside.set()
        release.wait(timeout=30)
        return "ran"

    def fire():
        try:
            outcomes.append(job())
        except Exception as exc:  # noqa: BLE001 - the dead run's release cannot reach PostgreSQL
            outcomes.append(type(exc).__name__)
        finally:
            connection.close()

    def fire_alone():
        runner = threading.Thread(target=fire)
        runner.start()
        return runner

    dying = fire_alone()
    assert inside.wait(timeout=30)
    fire_alone().join(timeout=30)  # the next beat, while the run is alive
    assert outcomes == [SKIPPED]
    with connection.cursor() as cursor:  # the runner dies: its backends go, and its lock
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_locks"
            " WHERE locktype = 'advisory' AND granted AND pid <> pg_backend_pid()"
        )
        cursor.execute("SELECT pg_terminate_backend(%s)", [backends[0]])
    release.set()
    dying.join(timeout=30)
    assert outcomes[1] != "ran"
    assert ScheduledJob.objects.get(name="tests.killed").running_since is not None
    fire_alone().join(timeout=30)  # within the hour stale_after would have waited
    assert outcomes[2] == "ran"
    assert ScheduledJob.objects.get(name="tests.killed").running_since is None


@pytest.mark.django_db(transaction=True)
def test_a_beat_run_is_recorded_on_one_row_under_its_job_or_else_its_task():
    @periodic_job("tests.claimed")
    def claimed():
        return "ran"

    assert record_run("tests.periodic_claimed", claimed) == "ran"
    assert record_run("tests.periodic_plain", lambda: "ran") == "ran"
    rows = {job.name: job for job in ScheduledJob.objects.filter(name__startswith="tests.")}
    assert sorted(rows) == ["tests.claimed", "tests.periodic_plain"]
    assert rows["tests.claimed"].task == "tests.periodic_claimed"
    assert all(job.last_succeeded_at is not None for job in rows.values())
