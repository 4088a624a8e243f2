"""The asset approval contract: the workflow reference, idempotent decisions."""

import threading
import uuid
from importlib import import_module

import pytest
from django.db import DatabaseError, connection, connections

from apps.assets import services
from apps.assets.models import ONE_LIVE_LINK, Asset, WorkflowCallback
from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import InvalidTransition
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.services import aggregate_lock_key
from apps.tenancy.models import AuditEvent
from tests.assets.factories import delegated, events, new_asset, outcomes, status_of
from tests.support import run_concurrently


@pytest.mark.django_db
def test_delegation_stores_the_instance_id_and_makes_the_asset_workflow_managed(tenant_a):
    asset, instance = delegated(tenant_a)
    assert asset.workflow_instance_id == instance and asset.is_workflow_managed
    with tenant_scope(tenant_a):
        assert list(Asset.objects.workflow_managed()) == [asset]
    assert [e for e, _ in events()] == ["AssetApprovalRequested", "AssetApprovalDelegated"]
    # a retried start's late answer cannot overwrite the reference
    assert not services.asset_record_delegation(
        asset=asset,
        approval_request_id=asset.approval_request_id,
        workflow_instance_id=uuid.uuid4(),
    )


def callback(instance, approve=True, reason="", callback_id="cb"):
    return services.callback_receive(
        workflow_instance_id=instance, approve=approve, reason=reason, callback_id=callback_id
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "approve,status,event",
    [(True, "approved", "AssetApproved"), (False, "rejected", "AssetRejected")],
)
def test_a_callback_decides_and_the_reference_stays(tenant_a, approve, status, event):
    asset, instance = delegated(tenant_a)
    callback(instance, approve=approve, reason="checked")
    assert outcomes() == ["pending"] and status_of(asset) == "requested"
    assert services.drain_callbacks(tenant_a.pk) == 1
    assert outcomes() == ["applied"]
    assert status_of(asset) == status and asset.workflow_instance_id == instance
    assert not asset.is_workflow_managed and asset.decision_reason == "checked"
    [(_, payload)] = events(event)
    assert payload["workflow_instance_id"] == str(instance) and payload["status"] == status
    with tenant_scope(tenant_a):
        audit = AuditEvent.objects.get(action=f"asset.{status}", object_id=str(asset.pk))
        [receipt] = WorkflowCallback.objects.values_list("pk", flat=True)
    assert audit.actor_label == "workflow-service"
    assert (audit.actor_user_id, audit.actor_service_id, audit.request_id) == (None, None, "")
    assert (audit.tenant_id, audit.object_type, audit.object_repr) == (
        tenant_a.pk,
        "assets.asset",
        asset.name,
    )
    assert audit.changes == {
        "status": ["requested", status],
        "decided_by": [None, "workflow-service"],
        "callback": [None, receipt],
    }


@pytest.mark.django_db
def test_a_callback_after_the_decision_is_acknowledged_and_changes_nothing(tenant_a):
    asset, instance = delegated(tenant_a)
    callback(instance, approve=True)
    services.drain_callbacks(tenant_a.pk)
    callback(instance, approve=False)
    services.drain_callbacks(tenant_a.pk)
    assert outcomes() == ["applied", "ignored"] and status_of(asset) == "approved"
    assert len(events("AssetApproved")) == 1 and not events("AssetRejected")
    [(_, ignored)] = events("WorkflowCallbackIgnored")
    assert ignored["status"] == "approved" and ignored["decision"] == "reject"


@pytest.mark.django_db
def test_of_callbacks_waiting_together_the_first_received_decides(tenant_a):
    asset, instance = delegated(tenant_a)
    callback(instance, approve=False, reason="first")
    callback(instance, approve=True, reason="second")
    assert services.apply_pending_callbacks(tenant_a.pk) == 2
    assert outcomes() == ["applied", "ignored"]
    assert status_of(asset) == "rejected" and asset.decision_reason == "first"
    assert [e for e, _ in events()][-2:] == ["AssetRejected", "WorkflowCallbackIgnored"]


@pytest.mark.django_db
def test_a_callback_for_an_unknown_instance_is_recorded_announced_and_changes_nothing(tenant_a):
    new_asset(tenant_a)
    receipt = callback(uuid.uuid4())
    assert not receipt.known and outcomes() == ["unknown_instance"]
    with system_scope():
        assert WorkflowCallback.objects.get(pk=receipt.id).tenant_id is None
    assert services.drain_all_callbacks() == 0
    # Only the announcement that it waits on a person: no asset moved.
    assert [event for event, _ in events()] == ["WorkflowCallbackUnknownInstance"]


@pytest.mark.django_db
def test_a_callback_whose_asset_was_deleted_before_it_applied_is_unknown(tenant_a):
    asset, instance = delegated(tenant_a)
    callback(instance)
    with tenant_scope(tenant_a):
        Asset.objects.filter(pk=asset.pk).delete()
    assert services.drain_all_callbacks() == 1
    assert outcomes() == ["unknown_instance"]


@pytest.mark.django_db(transaction=True)
def test_a_tenant_held_by_another_worker_is_left_to_it(tenant_a):
    asset, instance = delegated(tenant_a)
    callback(instance)
    held, release = threading.Event(), threading.Event()

    key = aggregate_lock_key("assets.callbacks", str(tenant_a.pk))

    def other_worker():
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s)", [key])
            held.set()
            release.wait(10)
            # Released before the thread ends: a closed session's locks go only once its
            # server process has exited, a moment after the client has moved on.
            cursor.execute("SELECT pg_advisory_unlock(%s)", [key])
        connections["default"].close()

    thread = threading.Thread(target=other_worker)
    thread.start()
    held.wait(10)
    assert services.apply_pending_callbacks(tenant_a.pk) is None
    assert services.drain_callbacks(tenant_a.pk) == 0 and outcomes() == ["pending"]
    release.set()
    thread.join()
    assert services.drain_callbacks(tenant_a.pk) == 1 and status_of(asset) == "approved"


@pytest.mark.django_db(transaction=True)
def test_fifty_concurrent_identical_callbacks_make_one_transition_and_one_event(tenant_a):
    asset, instance = delegated(tenant_a)

    def receive_and_apply():
        callback(instance)
        # Each thread is also a worker, taking batches as small as one callback.
        services.apply_pending_callbacks(tenant_a.pk, limit=1)

    _, errors = run_concurrently(receive_and_apply, 50)
    assert errors == []
    services.drain_callbacks(tenant_a.pk)
    settled = outcomes()
    assert settled.count("applied") == 1 and settled.count("ignored") == 49
    assert status_of(asset) == "approved"
    assert len(events("AssetApproved")) == 1
    assert len(events("WorkflowCallbackIgnored")) == 49


@pytest.mark.django_db
def test_a_person_decides_only_assets_no_workflow_manages(tenant_a):
    asset, _ = delegated(tenant_a)
    with pytest.raises(InvalidTransition) as refused:
        services.asset_decide(actor=SYSTEM_ACTOR, asset=asset, approve=True)
    assert refused.value.code == "workflow_managed"
    manual = services.asset_request_approval(
        actor=SYSTEM_ACTOR, asset=new_asset(tenant_a, "b"), delegate=False
    )
    decided = services.asset_decide(actor=SYSTEM_ACTOR, asset=manual, approve=False, reason="no")
    assert decided.status == "rejected" and decided.workflow_instance_id is None
    with pytest.raises(InvalidTransition):
        services.asset_decide(actor=SYSTEM_ACTOR, asset=decided, approve=True)


@pytest.mark.django_db
def test_the_reference_is_an_indexed_identifier_with_no_foreign_key():
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = 'assets_asset'"
            " AND indexname = 'IX_Assets_WorkflowInstance'"
        )
        (definition,) = cursor.fetchone()
        cursor.execute(
            "SELECT count(*) FROM information_schema.key_column_usage k"
            " JOIN information_schema.table_constraints c USING (constraint_name)"
            " WHERE k.table_name = 'assets_asset' AND k.column_name = 'workflow_instance_id'"
            " AND c.constraint_type = 'FOREIGN KEY'"
        )
        (foreign_keys,) = cursor.fetchone()
        cursor.execute(
            "SELECT data_type, is_nullable FROM information_schema.columns"
            " WHERE table_name = 'assets_asset' AND column_name = 'workflow_instance_id'"
        )
        column = cursor.fetchone()
    assert "(workflow_instance_id)" in definition
    assert foreign_keys == 0
    assert column == ("uuid", "YES")


@pytest.mark.django_db
def test_the_workflow_managed_filter_returns_exactly_the_waiting_assets(tenant_a):
    waiting, _ = delegated(tenant_a)
    decided, instance = delegated(tenant_a)
    callback(instance)
    services.drain_callbacks(tenant_a.pk)
    services.asset_request_approval(
        actor=SYSTEM_ACTOR, asset=new_asset(tenant_a, "manual"), delegate=False
    )
    new_asset(tenant_a, "draft")
    with tenant_scope(tenant_a):
        assert [a.pk for a in Asset.objects.workflow_managed()] == [waiting.pk]


# 100,000 assets, 1 % of them waiting on the Workflow Service: most of the rest were
# delegated once and keep their instance id (the link back), so "instance set" alone
# selects nearly every row and only the partial index stays small. Another 1 % were
# asked for again and still carry the last request's instance: they wait on no one.
REALISTIC_ASSETS = """
INSERT INTO assets_asset (id, tenant_id, name, description, status, workflow_instance_id,
    approval_request_id, workflow_link_stale, decided_by, decision_reason,
    delegation_failure, status_reason, created_at, updated_at)
SELECT gen_random_uuid(), %(tenant)s, 'asset-' || i, '',
    CASE WHEN i %% 100 = 0 THEN 'requested' WHEN i %% 100 = 50 THEN 'requested'
         WHEN i %% 10 = 5 THEN 'draft' WHEN i %% 7 = 0 THEN 'rejected' ELSE 'approved' END,
    CASE WHEN i %% 10 = 5 THEN NULL ELSE gen_random_uuid() END,
    CASE WHEN i %% 10 = 5 THEN NULL ELSE md5('request' || i)::uuid END,
    i %% 100 = 50,
    '', '', '', '', now() - i * interval '1 minute', now() - i * interval '1 minute'
FROM generate_series(1, 100000) AS i
"""


@pytest.mark.django_db
def test_the_waiting_assets_query_is_served_by_the_partial_index_on_realistic_data(tenant_a):
    # given 100,000 assets, 1 % waiting, statistics analysed, the planner as it comes
    with tenant_scope(tenant_a), connection.cursor() as cursor:
        cursor.execute(REALISTIC_ASSETS, {"tenant": tenant_a.pk})
        cursor.execute("ANALYZE assets_asset")
        cursor.execute("SHOW enable_seqscan")
        assert cursor.fetchone() == ("on",)
        # when the waiting assets are asked for
        sql, params = Asset.objects.workflow_managed().query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
        waiting = Asset.objects.workflow_managed().count()
    # then a partial index, whose size is the waiting assets, serves it: PostgreSQL 16
    # reads asset_waiting_on_workflow in order, 15 the live-link index (its condition is
    # the query's own) and sorts its thousand rows; and it holds exactly the waiting ones
    assert "asset_waiting_on_workflow" in plan or ONE_LIVE_LINK in plan, plan
    assert "Seq Scan" not in plan, plan
    assert waiting == 1000


@pytest.mark.django_db
def test_a_receipt_belongs_to_the_assets_tenant_and_no_other(tenant_a, tenant_b):
    _, instance = delegated(tenant_a)
    receipt = callback(instance)
    with tenant_scope(tenant_a):
        assert WorkflowCallback.objects.get().pk == receipt.id
    with tenant_scope(tenant_b):
        assert not WorkflowCallback.objects.exists()
    # Recording looks across tenants: from inside one tenant's scope that would widen it.
    with pytest.raises(DatabaseError), tenant_scope(tenant_b):
        callback(instance)


@pytest.mark.django_db
def test_an_asset_moves_only_as_its_transition_table_allows(tenant_a):
    manual = services.asset_request_approval(
        actor=SYSTEM_ACTOR, asset=new_asset(tenant_a), delegate=False
    )
    approved = services.asset_decide(actor=SYSTEM_ACTOR, asset=manual, approve=True)
    with pytest.raises(InvalidTransition) as asked_again:
        services.asset_request_approval(actor=SYSTEM_ACTOR, asset=approved, delegate=False)
    assert asked_again.value.detail == "The asset is approved; this needs it draft or rejected."
    assert asked_again.value.extra == {"status": "approved"}
    with pytest.raises(InvalidTransition) as decided_again:
        services.asset_decide(actor=SYSTEM_ACTOR, asset=approved, approve=False)
    assert decided_again.value.detail == "The asset is approved; this needs it requested."
    rejected = services.asset_decide(
        actor=SYSTEM_ACTOR,
        asset=services.asset_request_approval(
            actor=SYSTEM_ACTOR, asset=new_asset(tenant_a, "again"), delegate=False
        ),
        approve=False,
    )
    again = services.asset_request_approval(actor=SYSTEM_ACTOR, asset=rejected, delegate=False)
    assert again.status == "requested" and again.decision_reason == ""


@pytest.mark.django_db
def test_the_back_fill_links_existing_receipts_tenant_by_tenant_under_row_level_security(
    tenant_a, tenant_b
):
    # given receipts as they were before migration 0008, naming only the instance
    backfill = import_module("apps.assets.migrations.0008_workflow_link_and_lifecycle").BACKFILL
    pairs = []
    for tenant in (tenant_a, tenant_b):
        asset, instance = delegated(tenant)
        callback(instance)
        with tenant_scope(tenant):
            WorkflowCallback.objects.update(asset_id=None)
        pairs.append((tenant, asset))
    # when the back-fill runs, with no scope of its own
    with connection.cursor() as cursor:
        cursor.execute(backfill)
    # then each tenant's receipts are their asset's again
    for tenant, asset in pairs:
        with tenant_scope(tenant):
            assert [r.asset_id for r in WorkflowCallback.objects.all()] == [asset.pk]
