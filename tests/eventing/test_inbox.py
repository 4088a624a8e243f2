"""The inbox (apps.eventing.inbox): a handler runs once per event, in one transaction with
its inbox row; rows older than the deduplication window are swept."""

from datetime import timedelta

import pytest
from django.utils import timezone

from apps.core.scope import system_scope, tenant_scope
from apps.eventing import dispatcher
from apps.eventing.consumer_registry import Handler
from apps.eventing.inbox import handle_envelopes, purge_inbox
from apps.eventing.models import InboxEntry
from tests.eventing.factories import pump, recent_events_runner, stream_envelopes, write_events

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


def test_the_inbox_sweep_removes_rows_older_than_the_window(tenant_a, tenant_b, topic):
    runner = recent_events_runner(topic)
    write_events(tenant_a, topic, 2)
    write_events(tenant_b, topic, 1, aggregate="b")
    dispatcher.drain()
    pump(runner)
    old = timezone.now() - timedelta(hours=73)
    for tenant in (tenant_a, tenant_b):
        with tenant_scope(tenant):
            InboxEntry.objects.filter(tenant=tenant).update(handled_at=old)
    write_events(tenant_a, topic, 1, aggregate="fresh")
    dispatcher.drain()
    pump(runner)
    assert purge_inbox() == 3 + 0  # three old inbox rows; recent events are all fresh
    with system_scope():
        assert InboxEntry.objects.count() == 1
    assert len(stream_envelopes(topic)) == 4


def test_an_envelope_twice_in_one_batch_is_handled_once(tenant_a, topic):
    [envelope] = write_events(tenant_a, topic, 1)
    seen = []
    handler = Handler("test.twice", None, lambda env: seen.append(env.event_id))
    assert handle_envelopes(handler, [envelope, envelope]) == 1
    assert seen == [envelope.event_id]
