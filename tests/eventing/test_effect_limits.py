"""Bounded reconciliation (apps/eventing/effects.py): an uncertain effect the other side
never learns of leaves reconciliation at its limit of checks or of age, is escalated
(audited, announced) and waits on a person, who settles it by hand or retries it now.
The other side is a real local HTTP service."""

from datetime import timedelta

import httpx
import pytest
from celery.contrib.testing.worker import start_worker
from django.utils import timezone

from apps.core.context import SYSTEM_ACTOR
from apps.core.errors import Conflict, ValidationFailed
from apps.core.scope import system_scope, tenant_scope
from apps.eventing import selectors
from apps.eventing.effects import (
    ADAPTERS,
    UNKNOWN,
    Outcome,
    OutcomeUnknown,
    effect_retry_now,
    effect_settle,
    perform_effect,
    reconcile_due,
    register_adapter,
)
from apps.eventing.models import OutboxEvent, UncertainEffect
from apps.tenancy.models import AuditEvent
from portal.celery import app
from tests.support import LocalServer, wait_for

TARGET = "test-limits"


class KnowsByKey:
    """Asks the other side for the call by its key; remembers what it was told to settle."""

    topic = "tenancy.tenant"  # a topic of the catalog, for the escalation event

    def __init__(self, base_url):
        self.base_url, self.settled_effects = base_url, []

    def check(self, effect):
        response = httpx.get(f"{self.base_url}/calls/{effect.external_ref}", timeout=2)
        if response.status_code == 404:
            return Outcome(UNKNOWN)
        return Outcome(UncertainEffect.State.SUCCEEDED, response.json())

    def settled(self, effect):
        self.settled_effects.append((effect.pk, effect.state, effect.result))


@pytest.fixture
def other_side(settings):
    known = {}

    def respond(received):
        key = received.path.rsplit("/", 1)[-1]
        return (200, known[key]) if key in known else (404, {})

    settings.STEWARD_EFFECT_MAX_CHECKS = 3
    settings.STEWARD_EFFECT_MAX_AGE_SECONDS = 3600
    with LocalServer(respond=respond) as server:
        server.known = known
        adapter = KnowsByKey(server.url)
        register_adapter(TARGET, adapter)
        yield server, adapter
    ADAPTERS.pop(TARGET, None)


def uncertain(tenant, key="k1"):
    def call():
        raise OutcomeUnknown("timed out")

    effect = perform_effect(
        tenant_id=tenant.pk,
        actor="test",
        target_system=TARGET,
        operation="start",
        external_ref=key,
        call=call,
    )
    assert effect.state == "uncertain"
    return effect


def make_due(tenant):
    with tenant_scope(tenant):
        UncertainEffect.objects.filter(next_check_at__isnull=False).update(
            next_check_at=timezone.now() - timedelta(seconds=1)
        )


def stored(effect):
    with system_scope():
        return UncertainEffect.objects.get(pk=effect.pk)


def audit(action):
    with system_scope():
        return list(AuditEvent.objects.filter(action=action).values_list("changes", flat=True))


def escalation_events():
    with system_scope():
        return list(
            OutboxEvent.objects.filter(event_type="UncertainEffectEscalated").values_list(
                "payload", flat=True
            )
        )


def checks_made(server):
    return len([r for r in server.received if r.method == "GET"])


@pytest.mark.django_db
def test_an_effect_still_unknown_at_its_check_limit_waits_on_a_person(tenant_a, other_side):
    server, _ = other_side
    effect = uncertain(tenant_a)
    delays = []
    for _ in range(2):
        make_due(tenant_a)
        assert reconcile_due() == 0
        now = stored(effect)
        assert now.escalated_at is None and now.next_check_at is not None
        delays.append(now.next_check_at - timezone.now())
    assert delays[1] > delays[0]  # each check backs off further
    make_due(tenant_a)
    assert reconcile_due() == 0
    escalated = stored(effect)
    assert escalated.state == "uncertain" and escalated.checks == 3
    assert escalated.escalated_at is not None and escalated.next_check_at is None
    with system_scope():
        assert list(selectors.effects_needing_a_person()) == [escalated]
    [payload] = escalation_events()
    assert payload["external_ref"] == "k1" and payload["checks"] == 3
    assert audit("effect.escalated")[0]["checks"] == [None, 3]
    # out of reconciliation: no more checks
    assert reconcile_due() == 0 and checks_made(server) == 3


@pytest.mark.django_db
def test_an_effect_past_its_age_limit_leaves_reconciliation_at_its_next_check(
    tenant_a, other_side, settings
):
    settings.STEWARD_EFFECT_MAX_CHECKS = 100
    settings.STEWARD_EFFECT_MAX_AGE_SECONDS = 60
    effect = uncertain(tenant_a)
    with tenant_scope(tenant_a):
        UncertainEffect.objects.update(reconcile_since=timezone.now() - timedelta(minutes=2))
    make_due(tenant_a)
    reconcile_due()
    assert stored(effect).escalated_at is not None and stored(effect).checks == 1


@pytest.mark.django_db
def test_an_effect_the_other_side_learns_of_before_the_limit_is_settled(tenant_a, other_side):
    server, adapter = other_side
    effect = uncertain(tenant_a)
    server.known["k1"] = {"instance": "wf-1"}
    make_due(tenant_a)
    assert reconcile_due() == 1
    assert stored(effect).state == "succeeded" and stored(effect).escalated_at is None
    assert adapter.settled_effects == [(effect.pk, "succeeded", {"instance": "wf-1"})]


def escalate(tenant, key="k1"):
    effect = uncertain(tenant, key)
    for _ in range(3):
        make_due(tenant)
        reconcile_due()
    assert stored(effect).escalated_at is not None
    return stored(effect)


@pytest.mark.django_db
def test_a_person_settles_an_escalated_effect_as_done_with_the_other_sides_reference(
    tenant_a, other_side
):
    _, adapter = other_side
    effect = escalate(tenant_a)
    done = effect_settle(
        effect=effect, actor=SYSTEM_ACTOR, done=True, reference="wf-42", reason="seen in its UI"
    )
    assert done.state == "succeeded"
    assert done.result == {"reference": "wf-42", "settled_by_hand": True}
    assert adapter.settled_effects == [(effect.pk, "succeeded", done.result)]
    [changes] = audit("effect.settle")
    assert changes == {
        "state": ["uncertain", "succeeded"],
        "reference": [None, "wf-42"],
        "reason": [None, "seen in its UI"],
    }
    with system_scope():
        assert not selectors.effects_needing_a_person().exists()


@pytest.mark.django_db
def test_a_person_settles_an_escalated_effect_as_not_done(tenant_a, other_side):
    _, adapter = other_side
    effect = escalate(tenant_a)
    failed = effect_settle(effect=effect, actor=SYSTEM_ACTOR, done=False, reason="never arrived")
    assert failed.state == "failed" and failed.last_error == "never arrived"
    assert adapter.settled_effects == [(effect.pk, "failed", {})]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "kwargs,error,code",
    [
        ({"done": True, "reference": "wf-1", "reason": " "}, ValidationFailed, "reason_required"),
        ({"done": True, "reference": "", "reason": "seen"}, ValidationFailed, "reference_required"),
    ],
)
def test_settling_by_hand_refuses_bad_input_and_changes_nothing(
    tenant_a, other_side, kwargs, error, code
):
    effect = escalate(tenant_a)
    with pytest.raises(error) as refused:
        effect_settle(effect=effect, actor=SYSTEM_ACTOR, **kwargs)
    assert refused.value.code == code
    after = stored(effect)
    assert (after.state, after.escalated_at, after.result) == ("uncertain", effect.escalated_at, {})
    assert audit("effect.settle") == []


@pytest.mark.django_db
def test_a_settled_effect_cannot_be_settled_or_retried_again(tenant_a, other_side):
    effect = escalate(tenant_a)
    effect_settle(effect=effect, actor=SYSTEM_ACTOR, done=False, reason="never arrived")
    for act in (
        lambda: effect_settle(
            effect=effect, actor=SYSTEM_ACTOR, done=True, reference="x", reason="y"
        ),
        lambda: effect_retry_now(effect=effect, actor=SYSTEM_ACTOR),
    ):
        with pytest.raises(Conflict) as refused:
            act()
        assert refused.value.code == "effect_already_settled"
    assert stored(effect).state == "failed" and len(audit("effect.settle")) == 1


@pytest.mark.django_db
def test_an_effect_still_being_reconciled_is_not_retried_by_hand(tenant_a, other_side):
    effect = uncertain(tenant_a)
    with pytest.raises(Conflict) as refused:
        effect_retry_now(effect=effect, actor=SYSTEM_ACTOR)
    assert refused.value.code == "effect_not_escalated"
    assert stored(effect).next_check_at == effect.next_check_at and audit("effect.retry") == []


@pytest.mark.django_db(transaction=True)
def test_retry_now_gives_a_fresh_round_that_a_real_worker_runs(tenant_a, other_side):
    server, adapter = other_side
    effect = escalate(tenant_a)
    server.known["k1"] = {"instance": "wf-late"}  # the other side has caught up
    with start_worker(
        app, pool="solo", perform_ping_check=False, queues=["periodic"], shutdown_timeout=30
    ):
        retried = effect_retry_now(effect=effect, actor=SYSTEM_ACTOR)
        assert retried.escalated_at is None and retried.checks == 0
        wait_for(lambda: stored(effect).state == "succeeded", timeout=30)
    assert stored(effect).result == {"instance": "wf-late"}
    [changes] = audit("effect.retry")
    assert changes["escalated_at"][1] is None and changes["checks"] == [None, 0]
