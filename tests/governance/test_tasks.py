"""Governance's Celery tasks, run by real workers where a message can be lost: Steward's
own owner tasks phase after phase, the minute's round sending lost work again, the
nightly sweep and its beat row."""

import pytest
from celery.contrib.testing.worker import start_worker
from django.core.exceptions import ImproperlyConfigured
from django_celery_beat.models import PeriodicTask

from apps.assets.models import Asset
from apps.core.scope import system_scope, tenant_scope
from apps.core.setup import SetupReport, install_schedules
from apps.governance.models import ExportArtifact
from apps.governance.orders import services
from apps.governance.retention import services as retention_services
from apps.governance.tasks import periodic_retention_sweep
from portal.celery import app
from tests.governance.factories import approved, complete, fresh, open_tasks
from tests.support import wait_for

pytestmark = pytest.mark.django_db


@pytest.mark.usefixtures("no_cooling_off")
@pytest.mark.django_db(transaction=True)
def test_a_real_worker_does_stewards_own_tasks_phase_after_phase(tenant_a):
    """No store bound: each phase waits only on Steward, whose worker deletes, redacts
    and releases, until the commercial service alone is left to close the subscription."""
    with tenant_scope(tenant_a):
        Asset.objects.create(tenant=tenant_a, name="weights")
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        order = approved(tenant_a)
        wait_for(
            lambda: (
                [t.status for t in open_tasks(order, 4) if t.owner == "steward"] == ["completed"]
            ),
            timeout=60,
        )
    steward = [t for t in open_tasks(order) if t.owner == "steward"]
    assert [(t.phase, t.status) for t in sorted(steward, key=lambda t: t.phase)] == [
        (1, "completed"),
        (2, "completed"),
        (3, "completed"),
        (4, "completed"),
    ]
    [closing] = [t for t in open_tasks(order, 4) if t.owner == "commercial"]
    assert closing.status == "issued"
    with system_scope():
        assert not Asset.objects.filter(tenant=tenant_a).exists()


@pytest.mark.usefixtures("no_cooling_off")
@pytest.mark.django_db(transaction=True)
def test_stewards_own_work_whose_message_was_lost_is_sent_again(tenant_a, settings):
    """Redis went away as the task was sent (or a worker died holding it): the minute's
    round sends Steward's open task again, and a real worker does it."""
    order = approved(tenant_a)
    [task] = [t for t in open_tasks(order, 1) if t.owner == "steward"]
    app.control.purge()  # the message is lost
    settings.STEWARD_STALLED_WORK_SECONDS = 0
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        assert services.advance_orders()["redriven"] == 1
        wait_for(lambda: fresh(task).status == "completed", timeout=30)


@pytest.mark.usefixtures("no_cooling_off")
@pytest.mark.django_db(transaction=True)
def test_an_export_nobody_assembled_is_assembled_by_the_round(tenant_a, settings):
    order = approved(tenant_a, kind="export")
    for task in open_tasks(order):  # Steward's own, done here, and nobody else's
        complete(task)
    app.control.purge()  # the assembly's message is lost
    assert fresh(order).status == "running"
    settings.STEWARD_STALLED_WORK_SECONDS = 0
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        assert services.advance_orders()["redriven"] == 1
        wait_for(lambda: fresh(order).status == "completed", timeout=30)
    with system_scope():
        assert ExportArtifact.objects.filter(order=order).count() == 1
    # once built, nothing is sent again
    assert services.advance_orders()["redriven"] == 0


def test_the_nightly_schedule_is_a_crontab_from_the_setting(settings):
    settings.STEWARD_RETENTION_SWEEP_CRONTAB = "15 3 * * *"
    install_schedules(SetupReport())
    task = PeriodicTask.objects.get(name="governance.periodic_retention_sweep")
    assert (task.crontab.minute, task.crontab.hour, task.queue) == ("15", "3", "periodic")
    settings.STEWARD_RETENTION_SWEEP_CRONTAB = "99 3 * *"
    with pytest.raises(ImproperlyConfigured):
        install_schedules(SetupReport())


def test_the_beat_task_runs_one_sweep(op, retention_bindings, personal):
    retention_services.rule_create(
        actor=op, name="p", data_class=personal, period_days=90, action="delete"
    )
    summary = periodic_retention_sweep()
    assert summary["status"] == "succeeded" and summary["purge_tasks_issued"] == 2
