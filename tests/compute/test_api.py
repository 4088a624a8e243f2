"""The compute API: the engine submits batches idempotently, workers report status."""

import pytest
from rest_framework.test import APIClient

from tests.compute.factories import batches_added_to
from tests.conftest import bearer
from tests.factories import service_token
from tests.query_counts import assert_flat_query_count
from tests.support import run_concurrently

BATCHES = "/api/v1/compute/batches/"


def platform_engine(name):
    """The workflow engine, a platform-wide service naming each batch's tenant."""
    return bearer(APIClient(), service_token(scopes=["compute:write"], name=name))


def submit_compute(tenant, **fields):
    """The `submit_compute` step's body."""
    return {"workflow_instance_id": "wf", "workflow_step_id": "s", "tenant": tenant.slug, **fields}


@pytest.mark.django_db
def test_the_engine_submits_idempotently_and_workers_report_status(tenant_a):
    engine = platform_engine("engine")
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
def test_platform_wide_workers_report_status_too(tenant_a):
    engine = platform_engine("platform-engine")
    created = engine.post(BATCHES, submit_compute(tenant_a, idempotency_key="k-plat"))
    url = f"{BATCHES}{created.json()['id']}/"
    etag = engine.get(url)["ETag"]
    done = engine.patch(url, {"status": "succeeded"}, HTTP_IF_MATCH=etag)
    assert done.status_code == 200, done.content
    assert done.json()["status"] == "succeeded"


@pytest.mark.django_db
def test_workflow_ids_longer_than_an_event_aggregate_id_are_refused(tenant_a):
    engine = platform_engine("engine-long")
    response = engine.post(
        BATCHES, submit_compute(tenant_a, idempotency_key="k-long", workflow_instance_id="w" * 65)
    )
    assert response.status_code == 400
    assert "workflow_instance_id" in response.json()["errors"]


@pytest.mark.django_db(transaction=True)
def test_two_identical_submissions_at_once_get_the_same_batch(tenant_a):
    issued = service_token(tenant=tenant_a, scopes=["compute:write"], name="racer")
    body = {"idempotency_key": "race", "workflow_instance_id": "wf-r", "workflow_step_id": "s"}
    results, errors = run_concurrently(lambda: bearer(APIClient(), issued).post(BATCHES, body), 2)
    assert errors == []
    assert sorted(r.status_code for r in results) == [200, 201]
    assert len({r.json()["id"] for r in results}) == 1


@pytest.mark.django_db
def test_the_batch_list_query_count_does_not_grow(api, operator, tenant_a, tenant_b):
    api.force_login(operator)
    assert_flat_query_count(batches_added_to(tenant_a, tenant_b), lambda: api.get(BATCHES))


@pytest.mark.django_db
def test_a_tenant_workers_batch_list_query_count_does_not_grow(tenant_a, tenant_b):
    worker = bearer(APIClient(), service_token(tenant=tenant_a, scopes=["compute:read"]))
    worker.get(BATCHES)  # a token's first use is recorded on it once, not per request
    assert_flat_query_count(batches_added_to(tenant_a, tenant_b), lambda: worker.get(BATCHES))


@pytest.mark.django_db
def test_a_tenant_bound_engine_cannot_tell_other_tenants_from_unknown_slugs(tenant_a, tenant_b):
    # Issue #19: `tenant_mismatch` for bravo but `does_not_exist` for a slug nobody has
    # let a tenant's token list the other tenants' slugs.
    engine = bearer(APIClient(), service_token(tenant=tenant_a, scopes=["compute:write"]))
    other = engine.post(BATCHES, submit_compute(tenant_b, idempotency_key="e-1"))
    unknown = engine.post(
        BATCHES, {**submit_compute(tenant_b, idempotency_key="e-2"), "tenant": "no-such-tenant"}
    )
    assert other.status_code == unknown.status_code == 400
    assert other.json() == unknown.json()
    assert other.json()["code"] == "tenant_mismatch"


@pytest.mark.django_db
def test_a_platform_engine_is_told_a_slug_names_no_tenant(tenant_a):
    answer = platform_engine("engine-u").post(
        BATCHES, {**submit_compute(tenant_a, idempotency_key="u-1"), "tenant": "no-such-tenant"}
    )
    assert answer.status_code == 400 and answer.json()["code"] == "does_not_exist"
