"""One stalled thing of each kind the attention queue knows, made the way it stalls."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.assets import services as asset_services
from apps.assets.models import Asset, WorkflowCallback
from apps.core.context import SYSTEM_ACTOR, Actor
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.effects import (
    ADAPTERS,
    UNKNOWN,
    Outcome,
    OutcomeUnknown,
    perform_effect,
    reconcile_due,
    register_adapter,
)
from apps.eventing.models import UncertainEffect
from apps.governance.models import GovernanceTask
from apps.governance.orders import services as orders
from apps.registry.models import Service, Topic
from apps.stores import services as stores
from apps.stores.models import StoreBinding
from apps.tenancy.models import Region
from tests.assets.factories import delegated, requested
from tests.assets.fakes import RefusingWorkflowService, served
from tests.eventing.factories import make_dead_letter, webhook
from tests.governance.factories import owner
from tests.stores.factories import bind, provisioned, rule
from tests.support import LocalServer

OTHER_SIDE = "attention-test"


@pytest.fixture(autouse=True)
def local_broker(settings, tmp_path):
    settings.STEWARD_SECRET_BROKER = "apps.stores.brokers.LocalFileBroker"
    settings.STEWARD_SECRET_BROKER_DIR = str(tmp_path / "secrets")


@pytest.fixture
def op(operator):
    return Actor(user=operator)


@pytest.fixture
def regions(db):
    return {
        slug: Region.objects.get_or_create(slug=slug, defaults={"name": slug, "jurisdiction": j})[0]
        for slug, j in (("israelcentral", "IL"), ("westeurope", "EU"))
    }


def flagged_binding(tenant, store, profile, regions):
    """Active in Europe, then the rule narrows to Israel: flagged, awaiting a decision."""
    allow = rule("allow", geographies=["EU", "IL"])
    binding = provisioned(tenant, store, profile, regions["westeurope"])
    stores.binding_migrations_applied(actor=SYSTEM_ACTOR, binding=binding)
    stores.rule_update(actor=SYSTEM_ACTOR, rule=allow, geographies=["IL"], regions=[])
    return binding


def stalled_binding(tenant, store, profile, regions):
    """Requested, and untouched for longer than the queue waits (its worker never ran)."""
    binding = bind(tenant, store, profile, regions["israelcentral"])
    with tenant_scope(tenant):
        StoreBinding.objects.filter(pk=binding.pk).update(
            updated_at=timezone.now() - timedelta(hours=1)
        )
    return binding


def owner_task(tenant, name="knowledge", *, days_late=1):
    Service.objects.get_or_create(name=name)
    with tenant_scope(tenant):
        task = orders.owner_task_issue(
            tenant_id=tenant.pk,
            owner=name,
            kind=GovernanceTask.Kind.PURGE,
            detail={"store": "knowledge-sql"},
            due_at=timezone.now() - timedelta(days=days_late),
        )
    return task


def overdue_task(tenant, name="knowledge"):
    task = owner_task(tenant, name)
    orders.flag_overdue_owner_tasks()
    return task


def failed_task(tenant, name="search"):
    task = owner_task(tenant, name, days_late=-1)
    orders.owner_task_fail(actor=owner(name), task_id=task.pk, reason="index offline")
    return task


def dead_letter(tenant, url):
    """An event the webhook at `url` refused every time; it answers now (mended)."""
    topic = Topic.objects.create(name="attention.test", current_schema_version=1)
    subscription = webhook(topic, url, "sink")
    return make_dead_letter(tenant, topic, subscription)


@pytest.fixture
def subscriber(monkeypatch):
    """The dead letter's subscriber, mended: its webhook takes what is replayed."""
    monkeypatch.setenv("STEWARD_WEBHOOK_SECRET_TEST", "whsec-sink")
    with LocalServer() as server:
        yield server


@pytest.fixture
def workflow_service(settings):
    with served(RefusingWorkflowService(), settings) as (_, service):
        yield service


def failed_delegation(tenant):
    """An approval request the Workflow Service refused to start."""
    asset = requested(tenant, "model-weights", delegate=False)
    asset_services.asset_delegate(asset_id=asset.pk)
    with tenant_scope(tenant):
        asset.refresh_from_db()
    assert asset.delegation_failure == "refused"
    return asset


class NobodyKnows:
    """Another system that never learns how a call went: its effects reach the limit."""

    topic = "tenancy.tenant"
    settled_effects: list = []

    def check(self, effect):
        return Outcome(UNKNOWN)

    def settled(self, effect):
        self.settled_effects.append((effect.pk, effect.state))


@pytest.fixture
def other_side(settings):
    settings.STEWARD_EFFECT_MAX_CHECKS = 1
    adapter = NobodyKnows()
    register_adapter(OTHER_SIDE, adapter)
    yield adapter
    ADAPTERS.pop(OTHER_SIDE, None)


def escalated_effect(tenant):
    """A call that timed out and that reconciliation, at its limit, gave up on."""

    def call():
        raise OutcomeUnknown("timed out")

    effect = perform_effect(
        tenant_id=tenant.pk,
        actor="test",
        target_system=OTHER_SIDE,
        operation="start",
        external_ref="call-1",
        call=call,
    )
    with tenant_scope(tenant):
        UncertainEffect.objects.filter(pk=effect.pk).update(next_check_at=timezone.now())
    reconcile_due()
    with system_scope():
        effect.refresh_from_db()
    assert effect.escalated_at is not None
    return effect


def overdue_decision(tenant):
    """A delegation the Workflow Service took and never decided, past the week a
    tenant's decision may take."""
    asset, _ = delegated(tenant, "ledger-export")
    with tenant_scope(tenant):
        Asset.objects.filter(pk=asset.pk).update(updated_at=timezone.now() - timedelta(days=8))
    return asset


def unknown_callback():
    receipt = asset_services.callback_receive(
        workflow_instance_id=uuid.uuid4(), approve=True, reason="ok", callback_id="cb-stray"
    )
    with system_scope():
        return WorkflowCallback.objects.get(pk=receipt.id)


@pytest.fixture
def stalled(tenant_a, tenant_b, store, profile, regions, subscriber, workflow_service, other_side):
    """One item of each kind Steward's apps raise here."""
    return {
        "failed-delegation": failed_delegation(tenant_a),
        "overdue-decision": overdue_decision(tenant_b),
        "unknown-callback": unknown_callback(),
        "uncertain-effect": escalated_effect(tenant_b),
        "flagged-binding": flagged_binding(tenant_a, store, profile, regions),
        "stalled-binding": stalled_binding(tenant_b, store, profile, regions),
        "overdue-task": overdue_task(tenant_a),
        "stalled-order": failed_task(tenant_b),
        "dead-letter": dead_letter(tenant_a, subscriber.url),
    }


def fresh(obj):
    with system_scope():
        obj.refresh_from_db()
    return obj


@pytest.fixture(autouse=True)
def _webhooks_reach_local_receivers(loopback_webhooks):
    """This directory's webhooks are delivered to receivers on loopback."""
