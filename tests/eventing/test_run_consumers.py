"""The consumers process (management command run_consumers)."""

import threading

import pytest
from django.db import OperationalError

from apps.eventing.consumers import webhook_runner
from apps.eventing.management.commands import run_consumers
from apps.eventing.management.commands.run_consumers import Command
from tests.eventing.factories import webhook


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
