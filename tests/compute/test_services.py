"""Submitting batches, their status reports, and the poller that completes the steps
waiting on them with step_completed."""

import pytest
from django.db import connection

from apps.compute import services
from apps.compute.models import ComputeBatch
from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import InvalidTransition
from apps.core.scope import system_scope, tenant_scope
from tests.compute.factories import finish, links, step_events, submit
from tests.support import run_concurrently


@pytest.mark.django_db
def test_terminal_batches_complete_their_step_once_with_their_outcome(tenant_a, tenant_b):
    done = finish(submit(tenant_a, step="train"), "succeeded", {"rows": 10})
    broke = finish(submit(tenant_b, step="score"), "failed", {"error": "OOM"})
    stopped = finish(submit(tenant_a, step="export"), "cancelled", {})
    waiting = submit(tenant_a, step="still-running")
    services.batch_set_status(actor=SYSTEM_ACTOR, batch=waiting, status="running")

    assert services.poll_batch_links() == 3
    assert services.poll_batch_links() == 0  # nothing fires twice
    events = {payload["batch_id"]: (payload, tenant) for payload, tenant in step_events()}
    assert set(events) == {str(done.pk), str(broke.pk), str(stopped.pk)}
    assert events[str(done.pk)][0]["outcome"] == "succeeded"
    assert events[str(done.pk)][0]["result_summary"] == {"rows": 10}
    assert events[str(broke.pk)][0]["outcome"] == "failed"
    assert events[str(broke.pk)][1] == tenant_b.pk
    assert events[str(stopped.pk)][0]["outcome"] == "cancelled"
    assert events[str(done.pk)][0]["workflow_step_id"] == "train"
    assert events[str(done.pk)][0]["workflow_instance_id"] == done.workflow_instance_id
    assert links() == {waiting.pk}  # the running batch's link is untouched


@pytest.mark.django_db(transaction=True)
def test_two_pollers_at_once_fire_each_step_completed_exactly_once(tenant_a, tenant_b, settings):
    settings.STEWARD_COMPUTE_POLL_BATCH = 7
    finished = [finish(submit(t)) for t in (tenant_a, tenant_b) for _ in range(60)]

    def poll():
        while services.poll_batch_links():
            pass

    _, errors = run_concurrently(poll, 2)
    assert errors == []
    fired = [payload["batch_id"] for payload, _ in step_events()]
    assert sorted(fired) == sorted(str(b.pk) for b in finished)
    assert links() == set()


@pytest.mark.django_db
def test_a_crash_between_publish_and_delete_leaves_both_undone(tenant_a, monkeypatch):
    batch = finish(submit(tenant_a))

    def crash(batch_ids):
        raise RuntimeError("the poller died after writing the event")

    monkeypatch.setattr(services, "_delete_links", crash)
    assert services.poll_batch_links() == 0  # logged; other tenants would carry on
    assert step_events() == []
    assert links() == {batch.pk}
    monkeypatch.undo()
    assert services.poll_batch_links() == 1
    assert len(step_events()) == 1


@pytest.mark.django_db
def test_a_link_whose_batch_is_gone_completes_as_batch_missing(tenant_a):
    batch = submit(tenant_a, step="lost")
    with tenant_scope(tenant_a):
        ComputeBatch.objects.filter(pk=batch.pk).delete()
    assert services.poll_batch_links() == 0
    assert services.resolve_orphan_links() == 1
    [(payload, tenant)] = step_events()
    assert payload["outcome"] == "batch_missing" and payload["batch_id"] == str(batch.pk)
    assert links() == set()


# 100,000 batches, each with the link its step waits on, and 1 % of them finished with
# their completion queued: the poll must reach links and batches by key, not by scanning.
REALISTIC_BATCHES = f"""
WITH b AS (
    INSERT INTO {services.BATCH} (id, tenant_id, idempotency_key, workflow_instance_id,
        workflow_step_id, status, result_summary, created_at, updated_at, finished_at)
    SELECT md5('batch' || i)::uuid, %(tenant)s, 'key-' || i, 'wf-' || (i / 10), 'step-' || i,
        CASE WHEN i %% 100 = 0 THEN 'succeeded' ELSE 'running' END, '{{}}'::jsonb,
        now() - i * interval '1 second', now(), NULL
    FROM generate_series(1, 100000) AS i
    RETURNING id, workflow_instance_id, workflow_step_id, status, created_at
), l AS (
    INSERT INTO {services.LINK} (batch_id, workflow_step_id, workflow_instance_id,
        created_at, tenant_id)
    SELECT id, workflow_step_id, workflow_instance_id, created_at, %(tenant)s FROM b
)
INSERT INTO {services.COMPLETION} (batch_id, tenant_id, queued_at)
SELECT id, %(tenant)s, created_at FROM b WHERE status = 'succeeded'
"""  # noqa: S608 - table names only


@pytest.mark.django_db
def test_the_poll_reads_the_completion_queue_and_reaches_links_by_key(tenant_a):
    # given realistic tables, statistics analysed, the planner as it comes
    with tenant_scope(tenant_a), connection.cursor() as cursor:
        cursor.execute(REALISTIC_BATCHES, {"tenant": tenant_a.pk})
    with system_scope(), connection.cursor() as cursor:
        for table in (services.LINK, services.BATCH, services.COMPLETION):
            cursor.execute(f"ANALYZE {table}")
        cursor.execute(f"SELECT count(*) FROM {services.COMPLETION}")  # noqa: S608
        assert cursor.fetchone() == (1000,)
        cursor.execute("SHOW enable_seqscan")
        assert cursor.fetchone() == ("on",)
        # when the poll's query is planned
        cursor.execute("EXPLAIN " + services.POLL_QUERY, [500])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    # then links and batches are reached by their keys
    assert "workflow_batch_link_pkey" in plan and "compute_computebatch_pkey" in plan, plan
    assert f"Seq Scan on {services.LINK}" not in plan, plan
    assert f"Seq Scan on {services.BATCH}" not in plan, plan


@pytest.mark.django_db
def test_an_instances_completions_leave_in_the_order_its_batches_finished(tenant_a):
    first_submitted = submit(tenant_a, step="a", instance="wf-order")
    second_submitted = submit(tenant_a, step="b", instance="wf-order")
    finish(second_submitted)
    finish(first_submitted)
    services.poll_batch_links()
    assert [payload["workflow_step_id"] for payload, _ in step_events()] == ["b", "a"]


@pytest.mark.django_db
def test_a_stale_copy_cannot_turn_a_finished_batch_into_another_outcome(tenant_a):
    batch = submit(tenant_a)
    with tenant_scope(tenant_a):
        stale = ComputeBatch.objects.get(pk=batch.pk)
    finish(batch, "succeeded")
    with pytest.raises(InvalidTransition):
        services.batch_set_status(actor=SYSTEM_ACTOR, batch=stale, status="failed")
    with system_scope():
        assert ComputeBatch.objects.get(pk=batch.pk).status == "succeeded"


@pytest.mark.django_db
def test_a_batch_moves_only_as_its_transition_table_allows(tenant_a):
    batch = submit(tenant_a)
    assert services.batch_set_status(actor=SYSTEM_ACTOR, batch=batch, status="queued") == batch
    running = services.batch_set_status(actor=SYSTEM_ACTOR, batch=batch, status="running")
    with pytest.raises(InvalidTransition) as back:
        services.batch_set_status(actor=SYSTEM_ACTOR, batch=running, status="queued")
    assert back.value.detail == "A running batch cannot become queued."
    assert back.value.extra == {"allowed": ["cancelled", "failed", "succeeded"]}
    done = finish(running)
    with pytest.raises(InvalidTransition) as after:
        services.batch_set_status(actor=SYSTEM_ACTOR, batch=done, status="failed")
    assert after.value.detail == "A succeeded batch cannot become failed."
    assert after.value.extra == {"allowed": []}
