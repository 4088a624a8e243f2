"""Steward behind Debian's PgBouncer in transaction mode (STEWARD_DB_POOLER=transaction):
the tenant scope, periodic jobs' exclusivity and the eventing paths hold when each
transaction may run on a different server connection, shared with other clients."""

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from django.db import connection

from apps.core.jobs import SKIPPED, periodic_job
from apps.core.locks import advisory_lock
from apps.core.scope import tenant_scope
from apps.eventing import dispatcher
from apps.eventing.consumer_registry import Handler
from apps.eventing.inbox import handle_envelopes
from apps.tenancy.models import Membership
from tests.eventing.factories import stream_envelopes
from tests.eventing.test_dispatcher import assert_in_order_once, emit_sequence, outbox_count
from tests.factories import member
from tests.support import database_url, run_concurrently, wait_for

ROOT = Path(__file__).resolve().parents[2]


def _backend() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cursor.fetchone()[0]


def test_each_tenant_scope_stays_in_its_transaction_across_shared_server_connections(
    through_pgbouncer, tenant_a, tenant_b
):
    member(tenant_a, username="of-a")
    member(tenant_b, username="of-b")
    backends = set()

    def read_in_turns() -> list[str]:
        wrong = []
        for turn in range(20):
            tenant, name = (tenant_a, "of-a") if turn % 2 else (tenant_b, "of-b")
            with tenant_scope(tenant):
                backends.add(_backend())
                seen = list(Membership.objects.values_list("user__username", flat=True))
                if seen != [name]:
                    wrong.append(f"{tenant.slug} read {seen}")
            # Outside any scope the next transaction, whichever server connection it
            # lands on, reads nothing: no scope outlived its transaction there.
            if Membership.objects.exists():
                wrong.append("a scope leaked to the next transaction")
        return wrong

    results, errors = run_concurrently(read_in_turns, 6)
    assert errors == []
    assert results == [[]] * 6
    # Six clients took turns on PgBouncer's three server connections.
    assert 1 <= len(backends) <= 3


def test_a_periodic_job_fired_by_four_runners_through_the_pooler_runs_once(through_pgbouncer):
    inside, release = threading.Event(), threading.Event()
    runs, results = [], []

    @periodic_job("tests.ha.pooled")
    def pooled():
        runs.append(1)
        inside.set()
        release.wait(timeout=30)
        return "ran"

    def fire():
        try:
            results.append(pooled())
        finally:
            connection.close()

    runners = [threading.Thread(target=fire) for _ in range(4)]
    runners[0].start()
    assert inside.wait(timeout=30)
    for runner in runners[1:]:
        runner.start()
    wait_for(lambda: results.count(SKIPPED) == 3)  # the others, while the first runs
    release.set()
    for runner in runners:
        runner.join(timeout=30)
    assert sorted(results) == ["ran", SKIPPED, SKIPPED, SKIPPED]
    assert runs == [1]
    assert pooled() == "ran"  # the claim and the lock were released


def test_the_lock_of_a_process_killed_through_the_pooler_is_freed(through_pgbouncer):
    # A runner of its own, configured as an operator's would be behind PgBouncer.
    code = (
        "import django, sys, time; django.setup()\n"
        "from apps.core.locks import advisory_lock\n"
        "with advisory_lock('tests.ha.killed') as held:\n"
        "    print(held, flush=True)\n"
        "    time.sleep(600)\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "portal.settings",
        "DATABASE_URL": database_url(),
        "STEWARD_DB_POOLER": "transaction",
    }
    runner = subprocess.Popen(  # noqa: S603
        [sys.executable, "-c", code], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        assert runner.stdout.readline().strip() == "True"
        with advisory_lock("tests.ha.killed", wait=False) as held:
            assert held is False
    finally:
        runner.send_signal(signal.SIGKILL)
        runner.wait(timeout=30)

    def free() -> bool:
        with advisory_lock("tests.ha.killed", wait=False) as held:
            return held

    wait_for(free)


def test_events_go_out_through_the_pooler_once_in_order_and_are_handled_once(
    through_pgbouncer, tenant_a, topic, settings
):
    settings.STEWARD_EVENTING = {**settings.STEWARD_EVENTING, "DISPATCH_BATCH": 7}
    ids = emit_sequence(tenant_a, topic, aggregates=10, per_aggregate=10)
    published, errors = run_concurrently(dispatcher.drain, 3)
    assert errors == []
    assert sum(published) == len(ids)
    assert outbox_count() == 0
    envelopes = stream_envelopes(topic)
    assert_in_order_once(envelopes, ids)

    handled = []
    handler = Handler("tests.ha.pooled", None, lambda envelope: handled.append(envelope.event_id))
    results, errors = run_concurrently(lambda: handle_envelopes(handler, envelopes), 2)
    assert errors == []
    assert sorted(handled) == sorted(ids)  # two consumers got them all; each handled once
