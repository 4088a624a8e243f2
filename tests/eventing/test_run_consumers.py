"""The consumers process (management command run_consumers)."""

import dataclasses
import io
import re
import threading
import urllib.error
import urllib.request
import uuid

import pytest
from django.db import OperationalError, connection
from prometheus_client.parser import text_string_to_metric_families

from apps.eventing import dispatcher
from apps.eventing.consumers import webhook_runner
from apps.eventing.management.commands import run_consumers
from apps.eventing.management.commands.run_consumers import Command
from apps.eventing.transports import RedisStreamTransport
from tests.eventing.factories import emit, webhook
from tests.support import LocalServer, wait_for


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("webhook_secret")
def test_a_changed_endpoint_or_secret_reference_replaces_the_running_runner(topic):
    subscription = webhook(topic, "http://127.0.0.1:9/a")
    before = Command._key(webhook_runner(subscription))
    subscription.endpoint = "http://127.0.0.1:9/b"
    assert Command._key(webhook_runner(subscription)) != before


def test_the_consumers_process_outlives_a_database_restart(monkeypatch):
    """Found by the chaos drill: the refresh loop of `run_consumers` raised when
    PostgreSQL restarted, and the whole process exited with its runner threads."""

    stopping = threading.Event()
    calls = []

    def refresh(running):
        calls.append(len(calls))
        if len(calls) == 1:
            raise OperationalError("the database system is shutting down")
        stopping.set()

    command = run_consumers.Command()
    monkeypatch.setattr(command, "refresh", refresh)
    monkeypatch.setattr(run_consumers, "RETRY_SECONDS", 0.01)
    command.run(stopping)
    assert calls == [0, 1]  # went on after the failed refresh, stopped when asked


def scrape(url: str, token: str = "") -> dict:
    """The samples of a Prometheus scrape, keyed as they print: name{label="value",...}."""
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - loopback
        text = response.read().decode()
    figures = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            figures[f"{sample.name}{{{labels}}}"] = sample.value
    return figures


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("webhook_secret", "fast_retries")
def test_the_consumers_process_serves_its_deliveries_failures_and_drops_as_metrics(
    settings, tenant_a, topic
):
    # given: a consumers process serving its figures (on a free port), the token set,
    # and a webhook subscription whose receiver fails once, then takes what comes
    settings.STEWARD_CONSUMERS_METRICS_ADDRESS = "127.0.0.1:0"
    settings.STEWARD_METRICS_TOKEN = "consumers-metrics"  # noqa: S105 - test value
    answers = iter([500])
    with LocalServer(respond=lambda r: (next(answers, 200), {})) as receiver:
        subscription = webhook(topic, receiver.url)
        group = subscription.group_name
        output = io.StringIO()
        stopping = threading.Event()

        def consumers_process():
            try:
                Command(stdout=output).run(stopping)
            finally:
                connection.close()  # the thread's own, before the test database goes

        process = threading.Thread(target=consumers_process)
        process.start()
        try:
            wait_for(lambda: "metrics at " in output.getvalue())
            url = re.search(r"metrics at (\S+)", output.getvalue()).group(1)
            # when: two events are delivered (the first after a failed attempt), and an
            # event of a tenant deleted since it was sent is dropped
            written = emit(tenant_a, topic, 2)
            orphan = dataclasses.replace(written[0], event_id=uuid.uuid4(), tenant_id=uuid.uuid4())
            RedisStreamTransport().publish([orphan])
            dispatcher.drain()
            wait_for(
                lambda: (
                    scrape(url, "consumers-metrics").get(
                        f'steward_consumer_deliveries_total{{group="{group}",outcome="delivered"}}'
                    )
                    == 2
                ),
                timeout=60,
            )
            figures = scrape(url, "consumers-metrics")
            # then: each outcome is counted for the subscription's group, drops included
            failed = f'steward_consumer_deliveries_total{{group="{group}",outcome="failed"}}'
            assert figures[failed] == 1
            dropped = f'group="{group}",reason="tenant_deleted"'
            assert figures[f"steward_consumer_events_dropped_total{{{dropped}}}"] == 1
            assert figures["steward_consumer_runners{}"] >= 1
            # and the figures are guarded as the web's /metrics: the token, or nothing
            with pytest.raises(urllib.error.HTTPError) as refused:
                scrape(url, "wrong")
            assert refused.value.code == 403
        finally:
            stopping.set()
            process.join(timeout=30)
    assert not process.is_alive()
