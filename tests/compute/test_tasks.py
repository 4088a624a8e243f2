"""The compute app's Celery tasks: the kicked poll and beat's sweeps."""

import pytest
from celery.contrib.testing.worker import start_worker

from apps.compute.models import ComputeBatch
from apps.compute.tasks import periodic_poll_batch_links, periodic_resolve_orphan_links
from apps.core.scope import tenant_scope
from portal.celery import app
from tests.compute.factories import finish, links, step_events, submit
from tests.support import wait_for


@pytest.mark.django_db(transaction=True)
def test_a_batch_turning_terminal_kicks_the_poller_on_a_real_worker(tenant_a, settings):
    batch = submit(tenant_a, step="kicked")
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        finish(batch)
        wait_for(lambda: len(step_events()) == 1, timeout=30)
    assert links() == set()


@pytest.mark.django_db
def test_the_periodic_poll_completes_every_terminal_batchs_step(tenant_a, tenant_b, settings):
    settings.STEWARD_COMPUTE_POLL_BATCH = 2
    finished = [finish(submit(tenant)) for tenant in (tenant_a, tenant_b) for _ in range(3)]
    waiting = submit(tenant_a)
    assert periodic_poll_batch_links.apply().get() == len(finished)
    assert links() == {waiting.pk} and len(step_events()) == len(finished)


@pytest.mark.django_db
def test_the_periodic_sweep_completes_the_steps_of_missing_batches(tenant_a):
    batch = submit(tenant_a)
    with tenant_scope(tenant_a):
        ComputeBatch.objects.filter(pk=batch.pk).delete()
    assert periodic_resolve_orphan_links.apply().get() == 1
    [(payload, _)] = step_events()
    assert payload["outcome"] == "batch_missing" and links() == set()
