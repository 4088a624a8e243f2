"""The start reconciler (apps/assets/effects.py): a start whose answer never came is
settled by asking the Workflow Service for the instance by its key."""

import uuid
from datetime import timedelta

import pytest
from django.utils import timezone

from apps.assets import selectors as asset_selectors
from apps.assets import services
from apps.assets.workflow import WorkflowServiceClient
from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import ValidationFailed
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import selectors
from apps.eventing.effects import effect_settle, reconcile_due
from apps.eventing.models import UncertainEffect
from tests.assets.factories import events, reload, requested

pytestmark = pytest.mark.django_db


def test_a_start_that_times_out_is_uncertain_then_reconciled_by_key(
    tenant_a, workflow_service, settings
):
    server, service = workflow_service
    settings.STEWARD_WORKFLOW_TIMEOUT_SECONDS = 0.2
    server.delay = 0.5  # it starts the instance, but answers too late
    asset = requested(tenant_a)
    assert services.asset_delegate(asset_id=asset.pk) == "uncertain"
    assert reload(asset).workflow_instance_id is None
    server.delay = 0
    with tenant_scope(tenant_a):
        UncertainEffect.objects.update(next_check_at=asset.created_at)
    assert reconcile_due() == 1
    stored = reload(asset)
    assert str(stored.workflow_instance_id) == service.instances[str(asset.approval_request_id)]
    assert len(service.instances) == 1  # never two instances for one request
    with system_scope():
        assert UncertainEffect.objects.get().state == "succeeded"


def lost_start(tenant, server, service, settings):
    """A delegated asset whose start never reached the Workflow Service and timed out."""
    settings.STEWARD_WORKFLOW_TIMEOUT_SECONDS = 0.2
    service.lose_starts, server.delay = 1, 0.5
    asset = requested(tenant)
    assert services.asset_delegate(asset_id=asset.pk) == "uncertain"
    service.lose_starts, server.delay = 0, 0
    assert service.instances == {}
    return asset


def check_now(tenant):
    with tenant_scope(tenant):
        UncertainEffect.objects.filter(next_check_at__isnull=False).update(
            next_check_at=timezone.now() - timedelta(seconds=1)
        )
    return reconcile_due()


def test_a_start_that_never_arrived_is_sent_again_under_its_key_at_the_limit(
    tenant_a, workflow_service, settings
):
    server, service = workflow_service
    settings.STEWARD_EFFECT_MAX_CHECKS = 2
    asset = lost_start(tenant_a, server, service, settings)
    key = str(asset.approval_request_id)
    # the first check: the service knows no instance under the key, and it is not the last
    assert check_now(tenant_a) == 0 and service.start_keys == [key]
    # the last check: still unknown, so the start never arrived; it goes again
    assert check_now(tenant_a) == 1
    assert service.start_keys == [key, key]  # the same idempotency key
    assert list(service.instances) == [key]  # exactly one instance at the other side
    stored = reload(asset)
    assert str(stored.workflow_instance_id) == service.instances[key] and stored.is_workflow_managed
    with system_scope():
        effect = UncertainEffect.objects.get()
    assert effect.state == "succeeded" and effect.escalated_at is None
    # and whatever sends it again after, the other side still holds one instance
    WorkflowServiceClient().start_approval(
        idempotency_key=key, asset_id=str(asset.pk), tenant_id=str(tenant_a.pk)
    )
    assert len(service.instances) == 1


def test_a_start_sent_again_without_an_answer_waits_on_a_person_who_settles_it(
    tenant_a, workflow_service, settings
):
    server, service = workflow_service
    settings.STEWARD_EFFECT_MAX_CHECKS = 1
    asset = lost_start(tenant_a, server, service, settings)
    service.lose_starts = 1  # the second start is lost too
    assert check_now(tenant_a) == 0
    with system_scope():
        [effect] = selectors.effects_needing_a_person()
    [(_, payload)] = events("UncertainEffectEscalated")
    assert payload["external_ref"] == str(asset.approval_request_id)
    # a person who found the instance in the Workflow Service's console links it by hand
    with pytest.raises(ValidationFailed) as bad:
        effect_settle(effect=effect, actor=SYSTEM_ACTOR, done=True, reference="wf-1", reason="x")
    assert bad.value.code == "invalid_reference" and reload(asset).workflow_instance_id is None
    instance = uuid.uuid4()
    effect_settle(
        effect=effect, actor=SYSTEM_ACTOR, done=True, reference=str(instance), reason="found it"
    )
    assert reload(asset).workflow_instance_id == instance and reload(asset).is_workflow_managed


def test_a_start_settled_by_hand_as_not_done_is_a_failed_delegation(
    tenant_a, workflow_service, settings
):
    server, service = workflow_service
    settings.STEWARD_EFFECT_MAX_CHECKS = 1
    asset = lost_start(tenant_a, server, service, settings)
    service.lose_starts = 1
    check_now(tenant_a)
    with system_scope():
        [effect] = selectors.effects_needing_a_person()
    effect_settle(effect=effect, actor=SYSTEM_ACTOR, done=False, reason="the service was down")
    stored = reload(asset)
    assert stored.delegation_failure == "failed" and stored.status_reason == "the service was down"
    with system_scope():
        assert [a.pk for a in asset_selectors.delegations_needing_attention()] == [asset.pk]
