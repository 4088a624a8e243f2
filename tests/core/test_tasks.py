"""Celery tasks run in an explicit scope; the foundation's purge of idempotency records."""

import time
from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker
from django.utils import timezone

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
