"""Uncertain effects against a real local HTTP service: a timeout is recorded, then settled
by asking the other side."""

import httpx
import pytest

from apps.core.context import SYSTEM_ACTOR
from apps.core.scope import system_scope, tenant_scope
from apps.eventing.effects import (
    ADAPTERS,
    Outcome,
    effect_settle,
    perform_effect,
    reconcile_due,
    register_adapter,
)
from apps.eventing.models import UncertainEffect
from tests.support import LocalServer

pytestmark = pytest.mark.django_db


class LookupAdapter:
    """Asks the other side whether it knows a call by its idempotency key."""

    def __init__(self, base_url):
        self.base_url = base_url

    def check(self, effect):
        response = httpx.get(f"{self.base_url}/calls/{effect.external_ref}", timeout=2)
        if response.status_code == 404:
            return Outcome("unknown")
        return Outcome(UncertainEffect.State.SUCCEEDED, response.json())


@pytest.fixture
def other_side():
    calls = {}

    def respond(received):
        key = received.path.rsplit("/", 1)[-1]
        if received.method == "POST":
            calls[key] = {"instance": f"wf-{key}"}  # it did the work, even if the answer is late
            return 201, calls[key]
        return (200, calls[key]) if key in calls else (404, {})

    with LocalServer(respond=respond) as server:
        yield server
    ADAPTERS.pop("test-workflows", None)


def start(server, key, *, timeout):
    def call():
        response = httpx.post(f"{server.url}/calls/{key}", timeout=timeout)
        response.raise_for_status()
        return response.json()

    return call


def unanswered_and_due(tenant, key, adapter):
    """An effect whose call timed out, due for a check by `adapter`."""

    def never_reaches():
        raise httpx.ReadTimeout("no answer")

    effect = perform_effect(
        tenant_id=tenant.pk,
        actor="test",
        target_system="test-workflows",
        operation="start",
        external_ref=key,
        call=never_reaches,
    )
    register_adapter("test-workflows", adapter)
    with tenant_scope(tenant):
        UncertainEffect.objects.filter(pk=effect.pk).update(next_check_at=effect.created_at)
    return effect


def test_an_answered_call_is_settled_at_once(tenant_a, other_side):
    effect = perform_effect(
        tenant_id=tenant_a.pk,
        actor="test",
        target_system="test-workflows",
        operation="start",
        external_ref="k1",
        call=start(other_side, "k1", timeout=2),
    )
    assert effect.state == "succeeded" and effect.result == {"instance": "wf-k1"}


def test_a_timed_out_call_is_uncertain_then_reconciled_by_asking(
    tenant_a, other_side, fast_retries
):
    other_side.delay = 0.5
    effect = perform_effect(
        tenant_id=tenant_a.pk,
        actor="test",
        target_system="test-workflows",
        operation="start",
        external_ref="k2",
        call=start(other_side, "k2", timeout=0.1),
    )
    assert effect.state == "uncertain" and effect.next_check_at is not None
    other_side.delay = 0
    register_adapter("test-workflows", LookupAdapter(other_side.url))
    with tenant_scope(tenant_a):
        UncertainEffect.objects.filter(pk=effect.pk).update(next_check_at=effect.created_at)
    assert reconcile_due() == 1
    with system_scope():
        effect.refresh_from_db()
    assert effect.state == "succeeded" and effect.result == {"instance": "wf-k2"}
    # asking again with the same reference does not call a second time
    again = perform_effect(
        tenant_id=tenant_a.pk,
        actor="test",
        target_system="test-workflows",
        operation="start",
        external_ref="k2",
        call=start(other_side, "k2", timeout=2),
    )
    assert again.pk == effect.pk
    assert sum(1 for r in other_side.received if r.method == "POST") == 1


def test_an_effect_the_other_side_does_not_know_stays_uncertain_and_backs_off(
    tenant_a, other_side, fast_retries
):
    effect = unanswered_and_due(tenant_a, "k3", LookupAdapter(other_side.url))
    assert reconcile_due() == 0
    with system_scope():
        effect.refresh_from_db()
    assert effect.state == "uncertain" and effect.attempts == 2
    assert effect.next_check_at > effect.created_at


def test_an_effect_a_person_settles_while_the_other_side_is_asked_stays_as_they_settled_it(
    tenant_a, other_side, fast_retries
):
    class SettledMeanwhile(LookupAdapter):
        def check(self, asked):
            effect_settle(effect=asked, actor=SYSTEM_ACTOR, done=False, reason="seen to")
            return Outcome(UncertainEffect.State.SUCCEEDED, {"instance": "wf-k4"})

    effect = unanswered_and_due(tenant_a, "k4", SettledMeanwhile(other_side.url))
    assert reconcile_due() == 0
    with system_scope():
        effect.refresh_from_db()
    assert (effect.state, effect.last_error, effect.result) == ("failed", "seen to", {})
