"""Celery tasks run in an explicit scope; periodic jobs stay correct under two beats."""

import threading
import time
from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from django.db import connection
from django.utils import timezone

from apps.core.jobs import SKIPPED, periodic_job
from apps.core.models import IdempotencyRecord, ScheduledJob
from apps.core.tasks import periodic_purge_idempotency_records, purge_idempotency_records
from apps.tenancy.models import Membership
from portal.celery import app
from tests.factories import member
from tests.support import run_concurrently


@app.task(scope="system", name="tests.count_memberships_system")
def count_memberships_system():
    return Membership.objects.count()


@app.task(scope="tenant", name="tests.count_memberships_tenant")
def count_memberships_tenant(*, tenant_id):
    return Membership.objects.count()


@app.task(name="tests.no_scope")
def no_scope():
    return Membership.objects.count()


@pytest.mark.django_db
def test_a_task_body_runs_in_the_scope_it_declares(tenant_a, tenant_b):
    member(tenant_a)
    member(tenant_b)
    assert count_memberships_system.apply().get() == 2
    assert count_memberships_tenant.apply(kwargs={"tenant_id": str(tenant_a.pk)}).get() == 1
    with pytest.raises(ValueError, match="needs tenant_id"):
        count_memberships_tenant.apply(kwargs={"tenant_id": ""}, throw=True)
    with pytest.raises(RuntimeError, match="declares no scope"):
        no_scope.apply(throw=True)


def make_records(n, *, age):
    created = timezone.now() - age
    IdempotencyRecord.objects.bulk_create(
        IdempotencyRecord(
            caller="service:1",
            key=f"{age.total_seconds()}-{i}",
            method="POST",
            path="/",
            request_digest="x",
            created_at=created,
        )
        for i in range(n)
    )


@pytest.mark.django_db
def test_the_purge_removes_only_records_past_the_replay_window():
    make_records(3, age=timedelta(days=2))
    make_records(2, age=timedelta(minutes=5))
    assert purge_idempotency_records(older_than=timezone.now() - timedelta(days=1)) == 3
    assert IdempotencyRecord.objects.count() == 2


@pytest.mark.django_db(transaction=True)
def test_two_purges_at_once_share_the_work_without_error():
    make_records(2400, age=timedelta(days=2))
    results, errors = run_concurrently(
        lambda: purge_idempotency_records(older_than=timezone.now()), 2
    )
    assert errors == []
    assert sum(results) == 2400
    assert IdempotencyRecord.objects.count() == 0


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
def test_a_real_worker_runs_the_scheduled_purge_from_the_broker():
    make_records(5, age=timedelta(days=2))
    with start_worker(
        app,
        pool="solo",
        perform_ping_check=False,
        queues=["default", "periodic"],
        shutdown_timeout=30,
    ):
        periodic_purge_idempotency_records.delay()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            job = ScheduledJob.objects.filter(name="core.purge_idempotency_records").first()
            if job is not None and job.last_succeeded_at is not None:
                break
            time.sleep(0.1)
    assert job is not None and job.last_succeeded_at is not None
    assert IdempotencyRecord.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_run_that_overstayed_does_not_release_the_claim_of_the_run_that_took_over():
    from apps.core.jobs import claim_job, release_job

    stale = timedelta(seconds=0)
    first = claim_job("tests.overstay", stale_after=timedelta(hours=1))
    second = claim_job("tests.overstay", stale_after=stale)  # took over the stale claim
    assert first is not None and second is not None and second != first
    release_job("tests.overstay", claimed_at=first, started=0.0)  # the slow first run ends
    job = ScheduledJob.objects.get(name="tests.overstay")
    assert job.running_since == second  # still held by the second run
