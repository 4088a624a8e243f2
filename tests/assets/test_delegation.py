"""The durable workflow link and delegations that cannot go ahead, against a real
(local) Workflow Service over HTTP: a re-request keeps the old link until the new one
arrives, with the old receipts still visible; a refused or failed start is the asset's
visible state, announced, listed for the attention queue, and resolved by a retry
(on a real worker) or a person's decision."""

import uuid
from datetime import timedelta

import pytest
from celery.contrib.testing.worker import start_worker

from apps.assets import selectors, services
from apps.assets.models import Asset
from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import system_scope, tenant_scope
from apps.tenancy.models import AuditEvent
from portal.celery import app
from tests.assets.factories import events, outcomes, reload, requested
from tests.assets.fakes import RefusingWorkflowService, served
from tests.support import LocalServer, wait_for

ASSETS = "/api/v1/assets/assets/"


def callback(instance, *, approve, callback_id):
    return services.callback_receive(
        workflow_instance_id=instance, approve=approve, reason="", callback_id=callback_id
    )


def delegations(asset):
    """The instance ids of the asset's delegations, as its audit trail has them."""
    with system_scope():
        return list(
            AuditEvent.objects.filter(action="asset.delegate", object_id=str(asset.pk))
            .order_by("id")
            .values_list("changes__workflow_instance_id", flat=True)
        )


@pytest.fixture
def refusing_service(settings):
    with served(RefusingWorkflowService(), settings) as both:
        yield both


@pytest.mark.django_db
def test_a_re_request_keeps_the_old_link_until_the_new_one_and_every_receipt_stays(
    tenant_a, workflow_service, api, admin_a, client
):
    _, service = workflow_service
    # given an asset the Workflow Service rejected under its first instance
    asset = requested(tenant_a)
    assert services.asset_delegate(asset_id=asset.pk) == "succeeded"
    first = reload(asset).workflow_instance_id
    callback(first, approve=False, callback_id="cb-first")
    services.drain_callbacks(tenant_a.pk)
    assert reload(asset).status == "rejected"
    # when it is asked for again
    again = services.asset_request_approval(actor=SYSTEM_ACTOR, asset=reload(asset), delegate=True)
    # then the old link stays, but the asset no longer waits on it
    assert again.workflow_instance_id == first and not again.is_workflow_managed
    with tenant_scope(tenant_a):
        assert not Asset.objects.workflow_managed().exists()
    # and a late duplicate from the old instance decides nothing
    callback(first, approve=True, callback_id="cb-first-late")
    services.drain_callbacks(tenant_a.pk)
    assert reload(asset).status == "requested" and outcomes() == ["applied", "ignored"]
    # until the new delegation replaces the link, audited like the first one
    assert services.asset_delegate(asset_id=asset.pk) == "succeeded"
    second = reload(asset).workflow_instance_id
    assert second != first and len(service.instances) == 2 and reload(asset).is_workflow_managed
    assert delegations(asset) == [[None, str(first)], [str(first), str(second)]]
    callback(second, approve=True, callback_id="cb-second")
    services.drain_callbacks(tenant_a.pk)
    assert reload(asset).status == "approved"
    # every receipt, under either instance, is the asset's, on the API and the page
    with tenant_scope(tenant_a):
        receipts = list(selectors.callbacks_of(reload(asset)))
    assert [r.callback_id for r in receipts] == ["cb-second", "cb-first-late", "cb-first"]
    api.force_login(admin_a)
    listed = api.get(f"{ASSETS}{asset.pk}/callbacks/").json()
    assert [(r["callback_id"], r["workflow_instance_id"]) for r in listed] == [
        ("cb-second", str(second)),
        ("cb-first-late", str(first)),
        ("cb-first", str(first)),
    ]
    client.force_login(admin_a)
    page = client.get(f"/assets/{asset.pk}/").content.decode()
    assert all(text in page for text in ("cb-first", "cb-first-late", "cb-second", str(first)))


@pytest.mark.django_db
def test_a_refused_start_is_the_assets_visible_state_and_waits_on_a_person(
    tenant_a, refusing_service, client, admin_a
):
    server, _ = refusing_service
    asset = requested(tenant_a)
    assert services.asset_delegate(asset_id=asset.pk) == "failed"
    stored = reload(asset)
    assert stored.delegation_failure == "refused" and "HTTP 422" in stored.status_reason
    assert stored.status == "requested" and not stored.is_workflow_managed
    [(_, payload)] = events("AssetDelegationFailed")
    assert payload["failure"] == "refused" and "HTTP 422" in payload["reason"]
    with system_scope():
        assert [a.pk for a in selectors.delegations_needing_attention()] == [asset.pk]
        [audit] = AuditEvent.objects.filter(action="asset.delegation_failed")
    assert audit.changes["delegation_failure"] == ["", "refused"]
    # the resume sweep leaves it to the person: it is not lost, it was refused
    assert services.resume_lost_delegations(older_than=timedelta(0)) == 0
    assert services.asset_delegate(asset_id=asset.pk) == "nothing to do"
    assert len([r for r in server.received if r.method == "POST"]) == 1
    client.force_login(admin_a)
    page = client.get(f"/assets/{asset.pk}/").content.decode()
    assert "Delegation refused" in page and "Retry the delegation" in page
    listed = client.get(f"{ASSETS}", {"delegation_failed": "true"}).json()["results"]
    assert [(a["id"], a["delegation_failure"]) for a in listed] == [(str(asset.pk), "refused")]
    assert client.get(f"{ASSETS}", {"delegation_failed": "false"}).json()["results"] == []


@pytest.mark.django_db
def test_a_start_answered_without_an_instance_is_a_failed_delegation(tenant_a, settings):
    with LocalServer(respond=lambda received: (201, {"unexpected": True})) as server:
        settings.STEWARD_WORKFLOW_SERVICE_URL = server.url
        settings.STEWARD_WORKFLOW_RETRIES = 0
        asset = requested(tenant_a)
        assert services.asset_delegate(asset_id=asset.pk) == "failed"
    stored = reload(asset)
    assert stored.delegation_failure == "failed" and "KeyError" in stored.status_reason
    [(_, payload)] = events("AssetDelegationFailed")
    assert payload["failure"] == "failed"


@pytest.mark.django_db(transaction=True)
def test_a_refused_delegation_retried_is_started_by_a_real_worker(tenant_a, refusing_service):
    server, service = refusing_service
    asset = requested(tenant_a)
    assert services.asset_delegate(asset_id=asset.pk) == "failed"
    first_key = reload(asset).approval_request_id
    service.refusing = False  # the Workflow Service's configuration is fixed
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["default"], shutdown_timeout=30
    ):
        retried = services.delegation_retry(asset=reload(asset), actor=SYSTEM_ACTOR)
        assert retried.delegation_failure == "" and retried.approval_request_id != first_key
        wait_for(lambda: reload(asset).is_workflow_managed, timeout=30)
    stored = reload(asset)
    assert str(stored.workflow_instance_id) == service.instances[str(stored.approval_request_id)]
    assert stored.status_reason == "" and len(service.instances) == 1
    with system_scope():
        assert not selectors.delegations_needing_attention().exists()
        [audit] = AuditEvent.objects.filter(action="asset.delegation_retry")
    assert audit.changes["delegation_failure"] == ["refused", ""]


@pytest.mark.django_db
def test_a_person_decides_a_refused_delegation_and_refusals_change_nothing(
    tenant_a, refusing_service
):
    asset = requested(tenant_a)
    services.asset_delegate(asset_id=asset.pk)
    with pytest.raises(ValidationFailed) as bad:
        services.delegation_decide(asset=reload(asset), actor=SYSTEM_ACTOR, decision="maybe")
    assert bad.value.code == "invalid_decision" and reload(asset).delegation_failure == "refused"
    decided = services.delegation_decide(
        asset=reload(asset), actor=SYSTEM_ACTOR, decision="approved", reason="checked by hand"
    )
    assert decided.status == "approved" and decided.decision_reason == "checked by hand"
    assert decided.delegation_failure == ""
    with system_scope():
        assert not selectors.delegations_needing_attention().exists()
        actions = list(
            AuditEvent.objects.filter(object_id=str(asset.pk))
            .order_by("id")
            .values_list("action", flat=True)
        )
    assert actions[-2:] == ["asset.approved", "asset.delegation_decided"]
    for act in (
        lambda: services.delegation_retry(asset=reload(asset), actor=SYSTEM_ACTOR),
        lambda: services.delegation_decide(
            asset=reload(asset), actor=SYSTEM_ACTOR, decision="rejected"
        ),
    ):
        with pytest.raises(Conflict) as refused:
            act()
        assert refused.value.code == "delegation_not_failed"
    assert reload(asset).status == "approved"


@pytest.mark.django_db
def test_the_console_decides_a_refused_delegation(tenant_a, refusing_service, client, admin_a):
    asset = requested(tenant_a)
    services.asset_delegate(asset_id=asset.pk)
    client.force_login(admin_a)
    client.post(f"/assets/{asset.pk}/delegation/decide/", {"decision": "rejected", "reason": "no"})
    stored = reload(asset)
    assert stored.status == "rejected" and stored.delegation_failure == ""


@pytest.mark.django_db
def test_a_delegation_never_failed_is_not_decided_through_the_failure_path(tenant_a):
    asset = requested(tenant_a, delegate=False)
    with pytest.raises(Conflict) as refused:
        services.delegation_decide(asset=asset, actor=SYSTEM_ACTOR, decision="approved")
    assert refused.value.code == "delegation_not_failed" and reload(asset).status == "requested"
    assert uuid.UUID(str(reload(asset).approval_request_id))
