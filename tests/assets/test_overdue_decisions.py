"""A delegation whose decision never comes: after its tenant's bound it waits on a
person in the attention queue (overdue-decision), who asks the Workflow Service, delegates
it again or retires the asset; the reconciler that asks by itself is installed on."""

from datetime import timedelta

import pytest
from django.utils import timezone
from django_celery_beat.models import PeriodicTask

from apps.assets import install, services
from apps.assets.models import Asset
from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict
from apps.core.scope import system_scope, tenant_scope
from apps.core.setup import SetupReport
from apps.tenancy.models import AuditEvent
from tests.assets.factories import delegated, outcomes, reload, requested
from tests.assets.fakes import StatefulWorkflowService, served
from tests.support import LocalServer, problem

pytestmark = pytest.mark.django_db
QUEUE = "/api/v1/attention/"
KIND = "overdue-decision"


@pytest.fixture
def workflow_service(settings):
    with served(StatefulWorkflowService(), settings) as (_, service):
        yield service


def waiting_since(asset, days):
    """The asset's delegation recorded `days` ago (its wait began then)."""
    with tenant_scope(asset.tenant_id):
        Asset.objects.filter(pk=asset.pk).update(updated_at=timezone.now() - timedelta(days=days))
    return asset


def overdue(tenant, name, days=8):
    asset, instance = delegated(tenant, name)
    return waiting_since(asset, days), instance


def queued(api):
    answer = api.get(QUEUE, {"kind": KIND})
    assert answer.status_code == 200, answer.content
    return answer.json()["results"]


def act(api, key, action, **body):
    return api.post(f"{QUEUE}{KIND}/{key}/{action}/", body, format="json")


def test_a_decision_older_than_its_tenants_bound_waits_on_a_person(
    api, operator, tenant_a, tenant_b, settings
):
    # given three assets the Workflow Service took: two past the default week, one of
    # them in a tenant allowed a month, and one within the week
    settings.STEWARD_WORKFLOW_DECISION_OVERDUE_DAYS_BY_TENANT = {tenant_b.slug: 30}
    late, instance = overdue(tenant_a, "late")
    overdue(tenant_b, "patient")
    overdue(tenant_a, "recent", days=2)
    api.force_login(operator)
    # then only the one past its own tenant's bound is in the queue, with what resolves it
    [item] = queued(api)
    assert item["key"] == str(late.pk) and item["tenant"] == tenant_a.slug
    assert str(instance) in item["waiting_for"] and "7 day" in item["waiting_for"]
    assert {a["name"] for a in item["actions"]} == {"ask", "rerequest", "retire"}
    # and a tenant's bound is the operator's to change
    settings.STEWARD_WORKFLOW_DECISION_OVERDUE_DAYS_BY_TENANT = {tenant_b.slug: 5}
    assert {i["tenant"] for i in queued(api)} == {tenant_a.slug, tenant_b.slug}


def test_asking_applies_what_the_service_decided_and_says_what_it_answered(
    api, operator, tenant_a, workflow_service
):
    decided, decided_instance = overdue(tenant_a, "decided")
    running, running_instance = overdue(tenant_a, "running")
    forgotten, _ = overdue(tenant_a, "forgotten")
    workflow_service.states[str(decided_instance)] = {"state": "completed", "decision": "approve"}
    workflow_service.states[str(running_instance)] = {"state": "running", "decision": None}
    api.force_login(operator)

    answer = act(api, decided.pk, "ask")
    assert answer.status_code == 200 and "applied" in answer.json()["result"]
    assert reload(decided).status == "approved" and outcomes() == ["applied"]
    assert "still deciding" in act(api, running.pk, "ask").json()["result"]
    assert "does not know" in act(api, forgotten.pk, "ask").json()["result"]
    assert [i["key"] for i in queued(api)] == [str(running.pk), str(forgotten.pk)]
    with system_scope():
        asked = AuditEvent.objects.filter(action="asset.workflow_asked")
        assert sorted(c["answer"][1] for c in asked.values_list("changes", flat=True)) == [
            "applied",
            "running",
            "unknown",
        ]
    # an asset no longer waiting is not asked about again
    problem(act(api, decided.pk, "ask"), 404, "not_in_queue")


def test_asking_a_service_that_does_not_answer_is_a_503_and_changes_nothing(
    api, operator, tenant_a, settings
):
    asset, _ = overdue(tenant_a, "silent")
    with LocalServer(respond=lambda received: (502, {})) as down:
        settings.STEWARD_WORKFLOW_SERVICE_URL = down.url
        api.force_login(operator)
        problem(act(api, asset.pk, "ask"), 503, "workflow_service_unavailable")
    assert reload(asset).status == "requested" and [i["key"] for i in queued(api)] == [
        str(asset.pk)
    ]


def test_delegating_again_is_a_new_request_and_the_old_instance_decides_nothing(
    api, operator, tenant_a, workflow_service
):
    asset, old_instance = overdue(tenant_a, "again")
    api.force_login(operator)

    answer = act(api, asset.pk, "rerequest")

    assert answer.status_code == 200, answer.content
    stored = reload(asset)
    assert stored.approval_request_id != asset.approval_request_id
    assert stored.workflow_link_stale and stored.workflow_instance_id == old_instance
    assert queued(api) == []
    # the old instance's late decision is acknowledged and decides nothing
    services.callback_receive(
        workflow_instance_id=old_instance, approve=True, reason="late", callback_id="cb-late"
    )
    services.drain_callbacks(tenant_a.pk)
    assert reload(asset).status == "requested" and outcomes() == ["ignored"]
    # the new request is delegated as any is, to a new instance
    services.asset_delegate(asset_id=asset.pk)
    renewed = reload(asset)
    assert renewed.is_workflow_managed and renewed.workflow_instance_id != old_instance
    # and an asset that no longer waits is refused with a stable code
    by_hand = requested(tenant_a, "by-hand", delegate=False)
    with pytest.raises(Conflict) as refused:
        services.delegation_rerequest(asset=by_hand, actor=SYSTEM_ACTOR)
    assert refused.value.code == "not_waiting_on_workflow"


def test_retiring_withdraws_the_request_with_its_reason(api, operator, tenant_a):
    asset, instance = overdue(tenant_a, "withdrawn")
    api.force_login(operator)
    problem(act(api, asset.pk, "retire"), 400, "reason_required")

    answer = act(api, asset.pk, "retire", reason="the project was cancelled")

    assert answer.status_code == 200, answer.content
    stored = reload(asset)
    assert (stored.status, stored.status_reason) == ("retired", "the project was cancelled")
    assert queued(api) == []
    services.callback_receive(
        workflow_instance_id=instance, approve=True, reason="late", callback_id="cb-late"
    )
    services.drain_callbacks(tenant_a.pk)
    assert reload(asset).status == "retired" and outcomes() == ["ignored"]


def test_the_console_attention_page_lists_overdue_decisions(client, operator, tenant_a):
    asset, _ = overdue(tenant_a, "console-visible")
    client.force_login(operator)

    page = client.get(f"/attention/?kind={KIND}")

    assert page.status_code == 200
    body = page.content.decode()
    assert "Decisions that never came" in body and "console-visible" in body
    assert "Ask the Workflow Service" in body and "Delegate again" in body


def test_the_reconciler_is_installed_on_and_one_silent_answer_stops_no_other(tenant_a, settings):
    PeriodicTask.objects.filter(name="assets.periodic_reconcile_workflows").delete()
    install.install_schedules(SetupReport())
    assert PeriodicTask.objects.get(name="assets.periodic_reconcile_workflows").enabled
    overdue(tenant_a, "first")
    overdue(tenant_a, "second")
    with LocalServer(respond=lambda received: (503, {})) as down:
        settings.STEWARD_WORKFLOW_SERVICE_URL = down.url
        counts = services.reconcile_stale_delegations()
    assert counts["unreachable"] == 2
