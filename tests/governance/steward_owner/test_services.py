"""Steward answering its own owner tasks: one run at a time, and nothing twice."""

import psycopg
import pytest

from apps.governance.steward_owner import services as steward_owner
from tests.governance.factories import approved, fresh, open_tasks
from tests.support import database_url

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("no_cooling_off")]


def test_a_task_another_run_has_claimed_is_left_to_it(tenant_a):
    order = approved(tenant_a)
    [task] = [t for t in open_tasks(order, 1) if t.owner == "steward"]
    key = f"governance.task:{task.pk}"
    with psycopg.connect(database_url(), autocommit=True) as other:  # the other run
        other.execute("SELECT pg_advisory_lock(hashtextextended(%s, 0))", [key])
        assert steward_owner.owner_task_run(task_id=task.pk) == "running elsewhere"
        assert fresh(task).status == "issued"
    # the other run's worker died: its connection, and the claim, went with it
    assert steward_owner.owner_task_run(task_id=task.pk) == "completed"
    assert steward_owner.owner_task_run(task_id=task.pk) == "nothing to do"
