"""Compute batches, the workflow_batch_link table and the step_completed poller."""

import uuid

import pytest
from django.db import DatabaseError, connection, transaction
from rest_framework.test import APIClient

from apps.compute import services
from apps.compute.models import ComputeBatch, WorkflowBatchLink
from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.models import OutboxEvent
from tests.conftest import bearer
from tests.factories import service_token
from tests.support import run_concurrently

BATCHES = "/api/v1/compute/batches/"


def submit(tenant, step="step-1", instance=None):
    batch, _ = services.batch_submit(
        actor=SYSTEM_ACTOR,
        tenant=tenant,
        idempotency_key=f"key-{uuid.uuid4().hex[:8]}",
        workflow_instance_id=instance or f"wf-{uuid.uuid4().hex[:6]}",
        workflow_step_id=step,
    )
    return batch


def finish(batch, status="succeeded", summary=None):
    return services.batch_set_status(
        actor=SYSTEM_ACTOR, batch=batch, status=status, result_summary=summary or {"rows": 3}
    )


def step_events():
    with system_scope():
        return list(
            OutboxEvent.objects.filter(topic="compute.step")
            .order_by("id")
            .values_list("payload", "tenant_id")
        )


def links():
    with system_scope():
        return set(WorkflowBatchLink.objects.values_list("batch_id", flat=True))


# --------------------------------------------------------------------------- the table


@pytest.mark.django_db
def test_the_link_table_has_exactly_the_contracted_columns_key_and_index():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT column_name FROM information_schema.columns "
            "WHERE table_name = 'workflow_batch_link'"
        )
        columns = {row[0] for row in cursor.fetchall()}
        cursor.execute(
            "SELECT a.attname FROM pg_index i JOIN pg_attribute a "
            "ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) "
            "WHERE i.indrelid = 'workflow_batch_link'::regclass AND i.indisprimary"
        )
        key = [row[0] for row in cursor.fetchall()]
        cursor.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'workflow_batch_link'"
        )
        indexes = dict(cursor.fetchall())
    assert columns == {
        "batch_id",
        "workflow_step_id",
        "workflow_instance_id",
        "created_at",
        "tenant_id",
    }
    assert key == ["batch_id"]
    assert set(indexes) == {"workflow_batch_link_pkey", "workflow_batch_links_tenant"}
    assert "(tenant_id)" in indexes["workflow_batch_links_tenant"]


@pytest.mark.django_db
def test_tenants_see_their_links_the_system_sees_all_and_deletes_none(tenant_a, tenant_b):
    a, b = submit(tenant_a), submit(tenant_b)
    with tenant_scope(tenant_a):
        assert set(WorkflowBatchLink.objects.values_list("batch_id", flat=True)) == {a.pk}
    with system_scope():
        assert set(WorkflowBatchLink.objects.values_list("batch_id", flat=True)) == {a.pk, b.pk}
        assert WorkflowBatchLink.objects.filter(batch_id=b.pk).delete()[0] == 0
    with tenant_scope(tenant_a):
        assert WorkflowBatchLink.objects.filter(batch_id=b.pk).delete()[0] == 0
        with pytest.raises(DatabaseError, match="row-level security"), transaction.atomic():
            WorkflowBatchLink.objects.create(
                batch_id=uuid.uuid4(),
                workflow_step_id="s",
                workflow_instance_id="i",
                tenant=tenant_b,
            )
    assert links() == {a.pk, b.pk}


# --------------------------------------------------------------------------- the poller


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


@pytest.mark.django_db
def test_the_poll_reads_the_completion_queue_and_reaches_links_by_key(tenant_a):
    for _ in range(3):
        submit(tenant_a)
    finish(submit(tenant_a))
    with system_scope(), connection.cursor() as cursor:
        cursor.execute(f"ANALYZE {services.LINK}")
        cursor.execute(f"ANALYZE {services.BATCH}")
        cursor.execute("SET LOCAL enable_seqscan = off")  # tiny tables: ask what it can use
        cursor.execute("EXPLAIN " + services.POLL_QUERY, [500])
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "workflow_batch_link_pkey" in plan and "compute_computebatch_pkey" in plan


# --------------------------------------------------------------------------- the API


@pytest.mark.django_db
def test_the_engine_submits_idempotently_and_workers_report_status(tenant_a):
    engine = bearer(APIClient(), service_token(scopes=["compute:write"], name="engine"))
    body = {
        "idempotency_key": "step-77",
        "workflow_instance_id": "wf-9",
        "workflow_step_id": "train",
        "tenant": tenant_a.slug,
    }
    first = engine.post(BATCHES, body)
    again = engine.post(BATCHES, body)
    assert first.status_code == 201 and again.status_code == 200
    assert first.json()["id"] == again.json()["id"]
    clash = engine.post(BATCHES, {**body, "workflow_step_id": "other"})
    assert clash.status_code == 409 and clash.json()["code"] == "idempotency_key_reused"
    batch_url = f"{BATCHES}{first.json()['id']}/"
    worker = bearer(APIClient(), service_token(tenant=tenant_a, scopes=["compute:write"]))
    assert worker.patch(batch_url, {"status": "running"}).json()["status"] == "running"
    done = worker.patch(batch_url, {"status": "succeeded", "result_summary": {"rows": 5}})
    assert done.status_code == 200 and done.json()["finished_at"]
    late = worker.patch(batch_url, {"status": "running"})
    assert late.status_code == 409 and late.json()["code"] == "invalid_transition"
    assert engine.post(BATCHES, {**body, "tenant": None, "idempotency_key": "x"}).status_code == 400


@pytest.mark.django_db
def test_there_is_no_public_api_for_links(api, operator):
    api.force_login(operator)
    assert api.get("/api/v1/compute/links/").status_code == 404
    assert api.get("/api/v1/compute/batch-links/").status_code == 404


@pytest.mark.django_db
def test_operators_see_outstanding_links_with_the_stale_ones_marked(
    client, operator, tenant_a, settings
):
    from datetime import timedelta

    from django.utils import timezone

    old, fresh = submit(tenant_a, step="old"), submit(tenant_a, step="fresh")
    with tenant_scope(tenant_a):
        WorkflowBatchLink.objects.filter(batch_id=old.pk).update(
            created_at=timezone.now() - timedelta(hours=3)
        )
    client.force_login(operator)
    page = client.get("/compute/links/", {"stale": "true"})
    assert [link.batch_id for link in page.context["object_list"]] == [old.pk]
    assert client.get("/compute/links/").status_code == 200
    assert fresh.pk in {
        link.batch_id for link in client.get("/compute/links/").context["object_list"]
    }


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/compute/", "/compute/links/"])
def test_compute_list_pages_query_count_does_not_grow(client, operator, tenant_a, url):
    from tests.console.test_views import list_page_queries

    client.force_login(operator)
    for _ in range(2):
        submit(tenant_a)
    few = list_page_queries(client, url)
    for _ in range(8):
        submit(tenant_a)
    assert list_page_queries(client, url) == few


@pytest.mark.django_db(transaction=True)
def test_a_batch_turning_terminal_kicks_the_poller_on_a_real_worker(tenant_a, settings):
    from celery.contrib.testing.worker import start_worker

    from portal.celery import app
    from tests.support import wait_for

    batch = submit(tenant_a, step="kicked")
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        finish(batch)
        wait_for(lambda: len(step_events()) == 1, timeout=30)
    assert links() == set()


@pytest.mark.django_db
def test_platform_wide_workers_report_status_too(tenant_a):
    engine = bearer(APIClient(), service_token(scopes=["compute:write"], name="platform-engine"))
    created = engine.post(
        BATCHES,
        {
            "idempotency_key": "k-plat",
            "workflow_instance_id": "wf",
            "workflow_step_id": "s",
            "tenant": tenant_a.slug,
        },
    )
    url = f"{BATCHES}{created.json()['id']}/"
    etag = engine.get(url)["ETag"]
    done = engine.patch(url, {"status": "succeeded"}, HTTP_IF_MATCH=etag)
    assert done.status_code == 200, done.content
    assert done.json()["status"] == "succeeded"


@pytest.mark.django_db
def test_workflow_ids_longer_than_an_event_aggregate_id_are_refused(tenant_a):
    engine = bearer(APIClient(), service_token(scopes=["compute:write"], name="engine-long"))
    response = engine.post(
        BATCHES,
        {
            "idempotency_key": "k-long",
            "workflow_instance_id": "w" * 65,
            "workflow_step_id": "s",
            "tenant": tenant_a.slug,
        },
    )
    assert response.status_code == 400
    assert "workflow_instance_id" in response.json()["errors"]


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
    from apps.core.errors import InvalidTransition

    batch = submit(tenant_a)
    with tenant_scope(tenant_a):
        stale = ComputeBatch.objects.get(pk=batch.pk)
    finish(batch, "succeeded")
    with pytest.raises(InvalidTransition):
        services.batch_set_status(actor=SYSTEM_ACTOR, batch=stale, status="failed")
    with system_scope():
        assert ComputeBatch.objects.get(pk=batch.pk).status == "succeeded"


@pytest.mark.django_db(transaction=True)
def test_two_identical_submissions_at_once_get_the_same_batch(tenant_a):
    issued = service_token(tenant=tenant_a, scopes=["compute:write"], name="racer")
    body = {"idempotency_key": "race", "workflow_instance_id": "wf-r", "workflow_step_id": "s"}
    results, errors = run_concurrently(lambda: bearer(APIClient(), issued).post(BATCHES, body), 2)
    assert errors == []
    assert sorted(r.status_code for r in results) == [200, 201]
    assert len({r.json()["id"] for r in results}) == 1
