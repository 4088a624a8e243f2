"""Steward answering its own owner tasks: one run at a time, and nothing twice."""

import psycopg
import pytest

from apps.governance.steward_owner import services as steward_owner
from tests.governance.factories import approved, fresh, open_tasks
from tests.support import database_url, wait_for

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_cooling_off")]


def backend_alive(pid: int) -> bool:
    with psycopg.connect(database_url(), autocommit=True) as probe:
        return (
            probe.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
            is not None
        )


def test_a_task_another_run_has_claimed_is_left_to_it(tenant_a):
    order = approved(tenant_a)
    [task] = [t for t in open_tasks(order, 1) if t.owner == "steward"]
    key = f"governance.task:{task.pk}"
    with psycopg.connect(database_url(), autocommit=True) as other:  # the other run
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [key])
        assert steward_owner.owner_task_run(task_id=task.pk) == "running elsewhere"
        assert fresh(task).status == "issued"
        other_pid = other.info.backend_pid
    # the other run's worker died: its connection, and the claim, went with it (once
    # the server has ended that backend, which it does after the client has gone)
    wait_for(lambda: not backend_alive(other_pid))
    assert steward_owner.owner_task_run(task_id=task.pk) == "completed"
    assert steward_owner.owner_task_run(task_id=task.pk) == "nothing to do"
