"""Eventing's Celery tasks (apps.eventing.tasks): registered under the names beat's rows
use, and committed events reach the stream through a real worker without waiting for
beat."""

import pytest
from celery.contrib.testing.worker import start_worker

from apps.core.outbox import NewEvent, emit_many
from apps.core.scope import tenant_scope
from apps.eventing import tasks
from portal.celery import app
from tests.eventing.factories import make_dead_letter, stream_envelopes
from tests.support import wait_for

TASK_NAMES = [
    "eventing.dispatch_outbox",
    "eventing.periodic_sweep_outbox",
    "eventing.periodic_reconcile_effects",
    "eventing.replay_dead_letter",
    "eventing.periodic_trim_streams",
    "eventing.periodic_redeliver_replays",
    "eventing.periodic_sample_lag",
    "eventing.follow_new_topics",
]


def test_the_tasks_keep_their_registered_names():
    assert all(name in app.tasks for name in TASK_NAMES)
    assert tasks.replay_dead_letter.name == "eventing.replay_dead_letter"


@pytest.mark.django_db
def test_a_replay_task_for_a_dead_letter_not_queued_skips_it(tenant_a, topic, webhook_subscription):
    dead = make_dead_letter(tenant_a, topic, webhook_subscription)
    assert tasks.replay_dead_letter.apply(kwargs={"dead_letter_id": dead.pk}).get() == "skipped"


@pytest.mark.django_db(transaction=True)
def test_a_commit_kicks_the_dispatcher_on_a_real_worker(tenant_a, topic, settings):
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "KICK_ON_COMMIT": True}
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        for batch in range(3):
            with tenant_scope(tenant_a):
                emit_many(
                    [
                        NewEvent(
                            topic=topic.name,
                            event_type="e",
                            aggregate_type="k",
                            aggregate_id=str(batch),
                            payload={"i": i},
                            tenant=tenant_a,
                        )
                        for i in range(10)
                    ]
                )
        wait_for(lambda: len(stream_envelopes(topic)) == 30, timeout=30)
