"""The inbox (apps.eventing.inbox): a handler runs once per event, in one transaction with
its inbox row. (Old rows go under the retention rules: tests/governance/retention.)"""

import pytest

from apps.core.scope import system_scope
from apps.eventing.consumer_registry import Handler
from apps.eventing.inbox import handle_envelopes
from apps.eventing.models import InboxEntry
from tests.eventing.factories import write_events

pytestmark = pytest.mark.django_db


def test_a_handler_and_its_inbox_row_commit_or_roll_back_together(tenant_a, topic):
    [envelope] = write_events(tenant_a, topic, 1)
    calls = []

    def explode(env):
        calls.append(env.event_id)
        raise RuntimeError("the effect failed")

    with pytest.raises(RuntimeError):
        handle_envelopes(Handler("test.exploding", None, explode), [envelope])
    with system_scope():
        assert not InboxEntry.objects.filter(consumer="test.exploding").exists()
    handle_envelopes(Handler("test.exploding", None, lambda env: calls.append("ok")), [envelope])
    handle_envelopes(Handler("test.exploding", None, lambda env: calls.append("again")), [envelope])
    assert calls == [envelope.event_id, "ok"]


def test_an_envelope_twice_in_one_batch_is_handled_once(tenant_a, topic):
    [envelope] = write_events(tenant_a, topic, 1)
    seen = []
    handler = Handler("test.twice", None, lambda env: seen.append(env.event_id))
    assert handle_envelopes(handler, [envelope, envelope]) == 1
    assert seen == [envelope.event_id]
