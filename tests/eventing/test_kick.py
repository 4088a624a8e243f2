"""Committed events reach the stream through a real Celery worker without waiting for beat."""

import pytest
from celery.contrib.testing.worker import start_worker

from apps.core.outbox import NewEvent, emit_many
from apps.core.scope import tenant_scope
from portal.celery import app
from tests.eventing.conftest import stream_envelopes
from tests.support import wait_for


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
